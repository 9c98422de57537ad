#include "source/pallas/value.h"

#include <cstring>
#include <sstream>

namespace mk::pallas {

bool Value::names(std::string_view suffix) const {
  if (kind != Kind::Symbol && kind != Kind::Call) return false;
  if (text == suffix) return true;
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         text[text.size() - suffix.size() - 1] == '.';
}

std::optional<Value> Value::get(std::string_view key) const {
  if (kind != Kind::Dict) return std::nullopt;
  for (const auto& [k, v] : *entries) {
    if (k.kind == Kind::String && k.text == key) return v;
  }
  return std::nullopt;
}

std::string Value::render() const {
  switch (kind) {
    case Kind::Unknown:
      return "?";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return bool_value ? "True" : "False";
    case Kind::Int:
      return std::to_string(int_value);
    case Kind::Float: {
      std::ostringstream out;
      out << float_value;
      return out.str();
    }
    case Kind::String:
      return "'" + text + "'";
    case Kind::Tuple: {
      std::string out = "(";
      for (size_t i = 0; i < items->size(); ++i) {
        if (i) out += ", ";
        out += (*items)[i].render();
      }
      if (items->size() == 1) out += ",";
      return out + ")";
    }
    case Kind::Dict:
      return "{...}";
    case Kind::Symbol:
      return text;
    case Kind::Callable:
      return "<function>";
    case Kind::Call:
      return text + "(...)";
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Unknown:
      return false;  // two unknowns are not known to be equal
    case Value::Kind::None:
      return true;
    case Value::Kind::Bool:
      return a.bool_value == b.bool_value;
    case Value::Kind::Int:
      return a.int_value == b.int_value;
    case Value::Kind::Float:
      return a.float_value == b.float_value;
    case Value::Kind::String:
    case Value::Kind::Symbol:
      return a.text == b.text;
    case Value::Kind::Tuple:
      return *a.items == *b.items;
    case Value::Kind::Dict:
      return *a.entries == *b.entries;
    case Value::Kind::Callable:
    case Value::Kind::Call:
      return ts_node_eq(a.node, b.node);
  }
  return false;
}

}  // namespace mk::pallas
