// Values that simple constant evaluation of Python expressions can produce.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mk::pallas {

struct Value {
  enum class Kind {
    Unknown,  // not statically known; `text` says why
    None,
    Bool,
    Int,
    Float,
    String,
    Tuple,  // tuples and lists alike
    Dict,
    Symbol,    // a name from an import, qualified: "jax.experimental.pallas.BlockSpec"
    Callable,  // a `def` or `lambda` in this file; `node` points at it
    Call,      // a call to a library object we decode later (BlockSpec, ShapeDtypeStruct, ...)
  };

  Kind kind = Kind::Unknown;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string text;  // String value, Symbol name, Call callee, or the reason for Unknown
  std::shared_ptr<const std::vector<Value>> items;
  std::shared_ptr<const std::vector<std::pair<Value, Value>>> entries;
  TSNode node{};  // Callable: definition; Call: the call expression

  static Value unknown(std::string why) { return make(Kind::Unknown, std::move(why)); }
  static Value none() { return make(Kind::None, ""); }
  static Value boolean(bool b) {
    Value v = make(Kind::Bool, "");
    v.bool_value = b;
    return v;
  }
  static Value integer(int64_t i) {
    Value v = make(Kind::Int, "");
    v.int_value = i;
    return v;
  }
  static Value floating(double f) {
    Value v = make(Kind::Float, "");
    v.float_value = f;
    return v;
  }
  static Value string(std::string s) { return make(Kind::String, std::move(s)); }
  static Value symbol(std::string qualified) { return make(Kind::Symbol, std::move(qualified)); }
  static Value tuple(std::vector<Value> values) {
    Value v = make(Kind::Tuple, "");
    v.items = std::make_shared<const std::vector<Value>>(std::move(values));
    return v;
  }
  static Value dict(std::vector<std::pair<Value, Value>> kv) {
    Value v = make(Kind::Dict, "");
    v.entries = std::make_shared<const std::vector<std::pair<Value, Value>>>(std::move(kv));
    return v;
  }
  static Value callable(TSNode definition) {
    Value v = make(Kind::Callable, "");
    v.node = definition;
    return v;
  }
  static Value call(std::string callee, TSNode call_node) {
    Value v = make(Kind::Call, std::move(callee));
    v.node = call_node;
    return v;
  }

  bool is(Kind k) const { return kind == k; }
  bool known() const { return kind != Kind::Unknown; }
  std::optional<int64_t> as_int() const {
    if (kind == Kind::Int) return int_value;
    if (kind == Kind::Bool) return bool_value ? 1 : 0;
    return std::nullopt;
  }
  // A symbol or call whose qualified name ends with `.suffix` (or equals it).
  bool names(std::string_view suffix) const;
  // Looks up a string key in a Dict.
  std::optional<Value> get(std::string_view key) const;
  // Python-like rendering for hovers ("(128, 256)", "'parallel'", "?").
  std::string render() const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  static Value make(Kind k, std::string t) {
    Value v;
    v.kind = k;
    v.text = std::move(t);
    return v;
  }
};

}  // namespace mk::pallas
