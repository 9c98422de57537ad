#include "source/pallas/evaluator.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <functional>

#include "source/syntax/node_util.h"

namespace mk::pallas {

using syntax::field;
using syntax::is;
using syntax::named_children;
using syntax::text_of;
using syntax::unparen;

namespace {

constexpr int kMaxDepth = 48;

uint64_t node_key(TSNode node) {
  return (static_cast<uint64_t>(ts_node_start_byte(node)) << 16) ^ ts_node_symbol(node);
}

bool is_scope(TSNode node) {
  return is(node, "function_definition") || is(node, "lambda") || is(node, "module");
}

bool is_comprehension_type(const char* type) {
  return syntax::type_is(type, "list_comprehension") ||
         syntax::type_is(type, "generator_expression") ||
         syntax::type_is(type, "set_comprehension") ||
         syntax::type_is(type, "dictionary_comprehension");
}

bool is_comprehension(TSNode node) {
  return !ts_node_is_null(node) && is_comprehension_type(ts_node_type(node));
}

// A string literal with no f prefix holds no code: nothing inside it needs a walk.
bool is_plain_string(TSNode node, const char* type, std::string_view source) {
  if (!syntax::type_is(type, "string")) return false;
  for (size_t i = ts_node_start_byte(node); i < source.size(); ++i) {
    const char c = source[i];
    if (c == '"' || c == '\'') return true;
    if (c == 'f' || c == 'F') return false;
  }
  return false;
}

std::optional<int64_t> parse_int(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c != '_') digits.push_back(c);
  }
  int base = 10;
  std::string_view body = digits;
  if (body.size() > 2 && body[0] == '0') {
    const char p = static_cast<char>(body[1] | 0x20);
    if (p == 'x') base = 16;
    if (p == 'o') base = 8;
    if (p == 'b') base = 2;
    if (base != 10) body.remove_prefix(2);
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), value, base);
  if (ec != std::errc() || ptr != body.data() + body.size()) return std::nullopt;
  return value;
}

// The content of a plain (non-f) string literal, or nullopt.
std::optional<std::string> string_content(TSNode node, std::string_view source) {
  // The usual literal, "block_q" or 'x': its text between the quotes, without a walk.
  if (const std::string_view text = text_of(node, source);
      text.size() >= 2 && (text[0] == '"' || text[0] == '\'') && text.back() == text[0] &&
      (text.size() == 2 || text[1] != text[0]) &&
      text.find_first_of("\\\n", 1) == std::string_view::npos && is(node, "string"))
    return std::string(text.substr(1, text.size() - 2));
  std::string out;
  bool any = false;
  auto one = [&](TSNode s) -> bool {
    for (TSNode child : named_children(s)) {
      if (is(child, "interpolation")) return false;
      if (is(child, "string_start")) {
        std::string_view start = text_of(child, source);
        for (char c : start) {
          if (c == 'f' || c == 'F') return false;
        }
      }
      if (is(child, "string_content")) out += text_of(child, source);
    }
    any = true;
    return true;
  };
  if (is(node, "string")) {
    if (!one(node)) return std::nullopt;
  } else if (is(node, "concatenated_string")) {
    for (TSNode part : named_children(node)) {
      if (!is(part, "string") || !one(part)) return std::nullopt;
    }
  }
  if (!any) return std::nullopt;
  return out;
}

bool is_builtin(std::string_view name) {
  static const char* kBuiltins[] = {"min",  "max",   "len",        "int",   "tuple",
                                    "list", "abs",   "dict",       "float", "range",
                                    "sum",  "print", "isinstance", "slice"};
  return std::any_of(std::begin(kBuiltins), std::end(kBuiltins),
                     [&](const char* b) { return name == b; });
}

}  // namespace

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Evaluator::Evaluator(TSNode root, std::string_view source) : root_(root), source_(source) {}

// ----- scopes -------------------------------------------------------------------------------

const Evaluator::Scope& Evaluator::scope_of(TSNode scope_node) {
  const uint64_t key = node_key(scope_node);
  auto it = scopes_.find(key);
  if (it != scopes_.end()) return it->second;
  Scope scope;
  if (is(scope_node, "module")) {
    // Each binding remembers its top-level statement, so a cache can tell what a read depends on.
    const std::vector<TSNode>& statements = top_level_statements();
    for (size_t i = 0; i < statements.size(); ++i) {
      collecting_statement_ = static_cast<int>(i);
      collect_statement(statements[i], scope);
    }
    collecting_statement_ = -1;
  } else if (is(scope_node, "function_definition")) {
    collect_parameters(field(scope_node, "parameters"), scope,
                       text_of(field(scope_node, "name"), source_));
    collect_block(field(scope_node, "body"), scope);
  } else if (is(scope_node, "lambda")) {
    collect_parameters(field(scope_node, "parameters"), scope, "lambda");
  }
  return scopes_.emplace(key, std::move(scope)).first->second;
}

void Evaluator::add_binding(Scope& scope, std::string name, Binding binding) {
  binding.statement = collecting_statement_;
  scope[std::move(name)].push_back(std::move(binding));
}

void Evaluator::collect_parameters(TSNode parameters, Scope& scope, std::string_view owner) {
  if (ts_node_is_null(parameters)) return;
  for (TSNode p : named_children(parameters)) {
    TSNode name_node = p;
    if (is(p, "default_parameter") || is(p, "typed_default_parameter")) {
      name_node = field(p, "name");
    } else if (is(p, "typed_parameter") || is(p, "list_splat_pattern") ||
               is(p, "dictionary_splat_pattern")) {
      name_node = ts_node_named_child(p, 0);
    }
    if (!is(name_node, "identifier")) continue;
    Binding b;
    b.kind = Binding::Kind::Parameter;
    b.why = "parameter `" + std::string(text_of(name_node, source_)) + "` of `" +
            std::string(owner) + "`";
    add_binding(scope, std::string(text_of(name_node, source_)), b);
  }
}

void Evaluator::collect_block(TSNode block, Scope& scope) {
  if (ts_node_is_null(block)) return;
  for (TSNode statement : named_children(block)) collect_statement(statement, scope);
}

void Evaluator::bind_target(TSNode target, TSNode value, int index, Scope& scope) {
  target = unparen(target);
  if (is(target, "identifier")) {
    Binding b;
    b.kind = Binding::Kind::Value;
    b.value = value;
    b.unpack_index = index;
    add_binding(scope, std::string(text_of(target, source_)), b);
    return;
  }
  if (is(target, "pattern_list") || is(target, "tuple_pattern") || is(target, "list_pattern") ||
      is(target, "tuple") || is(target, "list")) {
    if (index >= 0) {  // nested unpacking: give up on the inner names
      for (TSNode t : named_children(target)) {
        if (is(t, "identifier")) {
          Binding b{Binding::Kind::Opaque, {}, -1, "", "nested unpacking"};
          add_binding(scope, std::string(text_of(t, source_)), b);
        }
      }
      return;
    }
    int i = 0;
    for (TSNode t : named_children(target)) bind_target(t, value, i++, scope);
  }
  // attribute / subscript targets bind no name
}

void Evaluator::collect_statement(TSNode statement, Scope& scope) {
  if (is(statement, "expression_statement")) {
    for (TSNode child : named_children(statement)) {
      if (is(child, "assignment")) {
        // `a = b = value`: the innermost right side is the value of every target.
        std::vector<TSNode> targets;
        TSNode node = child;
        while (is(node, "assignment")) {
          targets.push_back(field(node, "left"));
          TSNode right = field(node, "right");
          if (ts_node_is_null(right)) {
            node = right;
            break;
          }
          node = right;
        }
        for (TSNode t : targets) {
          if (ts_node_is_null(node)) {
            if (is(t, "identifier")) {
              add_binding(scope, std::string(text_of(t, source_)),
                          {Binding::Kind::Opaque, {}, -1, "", "annotation without a value"});
            }
          } else {
            bind_target(t, node, -1, scope);
          }
        }
      } else if (is(child, "augmented_assignment")) {
        TSNode left = field(child, "left");
        if (is(left, "identifier")) {
          add_binding(scope, std::string(text_of(left, source_)),
                      {Binding::Kind::Opaque, {}, -1, "", "updated in place"});
        }
      }
    }
    return;
  }
  if (is(statement, "function_definition") || is(statement, "class_definition")) {
    TSNode name = field(statement, "name");
    Binding b;
    b.kind =
        is(statement, "function_definition") ? Binding::Kind::Definition : Binding::Kind::Opaque;
    b.value = statement;
    b.why = "a class";
    add_binding(scope, std::string(text_of(name, source_)), b);
    return;
  }
  if (is(statement, "decorated_definition")) {
    collect_statement(field(statement, "definition"), scope);
    return;
  }
  if (is(statement, "import_statement")) {
    for (TSNode item : named_children(statement)) {
      if (is(item, "dotted_name")) {
        // `import jax.experimental.pallas` binds `jax`
        std::string full(text_of(item, source_));
        std::string first = full.substr(0, full.find('.'));
        add_binding(scope, first, {Binding::Kind::Import, {}, -1, first, ""});
      } else if (is(item, "aliased_import")) {
        std::string full(text_of(field(item, "name"), source_));
        add_binding(scope, std::string(text_of(field(item, "alias"), source_)),
                    {Binding::Kind::Import, {}, -1, full, ""});
      }
    }
    return;
  }
  if (is(statement, "import_from_statement")) {
    std::string module(text_of(field(statement, "module_name"), source_));
    TSNode module_node = field(statement, "module_name");
    for (TSNode item : named_children(statement)) {
      if (syntax::same_node(item, module_node)) continue;
      if (is(item, "dotted_name")) {
        std::string name(text_of(item, source_));
        add_binding(scope, name, {Binding::Kind::Import, {}, -1, module + "." + name, ""});
      } else if (is(item, "aliased_import")) {
        std::string name(text_of(field(item, "name"), source_));
        add_binding(scope, std::string(text_of(field(item, "alias"), source_)),
                    {Binding::Kind::Import, {}, -1, module + "." + name, ""});
      }
    }
    return;
  }
  if (is(statement, "for_statement")) {
    TSNode left = field(statement, "left");
    for (TSNode id : named_children(left)) {
      if (is(id, "identifier")) {
        add_binding(scope, std::string(text_of(id, source_)),
                    {Binding::Kind::Opaque, {}, -1, "", "a loop variable"});
      }
    }
    if (is(left, "identifier")) {
      add_binding(scope, std::string(text_of(left, source_)),
                  {Binding::Kind::Opaque, {}, -1, "", "a loop variable"});
    }
  }
  // `with x as name:` and `except E as name:` bind names whose values we cannot know.
  if (is(statement, "with_statement") || is(statement, "except_clause")) {
    std::function<void(TSNode)> bind_targets = [&](TSNode n) {
      if (is(n, "block")) return;
      if (is(n, "as_pattern_target") || (is(statement, "except_clause") && is(n, "identifier") &&
                                         syntax::same_node(n, field(statement, "alias")))) {
        std::vector<TSNode> ids = is(n, "identifier") ? std::vector<TSNode>{n} : named_children(n);
        if (is(n, "as_pattern_target") && ids.empty()) ids.push_back(n);
        for (TSNode id : ids) {
          if (is(id, "identifier")) {
            add_binding(scope, std::string(text_of(id, source_)),
                        {Binding::Kind::Opaque, {}, -1, "", "a with/except target"});
          }
        }
        return;
      }
      for (TSNode c : named_children(n)) bind_targets(c);
    };
    for (TSNode c : named_children(statement)) bind_targets(c);
  }
  // Compound statements: their blocks bind names in this same scope.
  if (is(statement, "if_statement") || is(statement, "for_statement") ||
      is(statement, "while_statement") || is(statement, "with_statement") ||
      is(statement, "try_statement") || is(statement, "elif_clause") ||
      is(statement, "else_clause") || is(statement, "except_clause") ||
      is(statement, "finally_clause") || is(statement, "block")) {
    for (TSNode child : named_children(statement)) {
      if (is(child, "block")) {
        collect_block(child, scope);
      } else if (is(child, "elif_clause") || is(child, "else_clause") ||
                 is(child, "except_clause") || is(child, "finally_clause")) {
        collect_statement(child, scope);
      }
    }
  }
}

void Evaluator::begin_statement() {
  memo_.clear();
  in_progress_.clear();
  module_reads_.clear();
}

std::vector<std::string> Evaluator::module_reads() const {
  std::vector<std::string> out(module_reads_.begin(), module_reads_.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> Evaluator::module_binding_statements(std::string_view name) {
  std::vector<int> out;
  const Scope& module = scope_of(root_);
  auto it = module.find(std::string(name));
  if (it == module.end()) return out;
  for (const Binding& b : it->second) out.push_back(b.statement);
  return out;
}

const std::vector<Binding>* Evaluator::module_binding(std::string_view name) {
  module_reads_.emplace(name);
  const Scope& module = scope_of(root_);
  auto it = module.find(std::string(name));
  return it == module.end() ? nullptr : &it->second;
}

std::vector<std::string> Evaluator::imported_modules() {
  std::vector<std::string> out;
  for (const auto& [name, bindings] : scope_of(root_)) {
    for (const Binding& b : bindings) {
      if (b.kind == Binding::Kind::Import) out.push_back(b.qualified);
    }
  }
  return out;
}

std::vector<std::string> Evaluator::top_level_imports() {
  Scope imports;
  for (TSNode statement : named_children(root_)) {
    if (is(statement, "import_statement") || is(statement, "import_from_statement"))
      collect_statement(statement, imports);
  }
  std::vector<std::string> out;
  // `import pkg.block` binds `pkg`, but names the module pkg.block too.
  for (TSNode statement : named_children(root_)) {
    if (!is(statement, "import_statement")) continue;
    for (TSNode item : named_children(statement))
      if (is(item, "dotted_name")) out.emplace_back(text_of(item, source_));
  }
  for (const auto& [name, bindings] : imports) {
    for (const Binding& b : bindings) {
      if (b.kind == Binding::Kind::Import) out.push_back(b.qualified);
    }
  }
  return out;
}

const std::vector<TSNode>& Evaluator::top_level_statements() {
  if (statements_.empty() && regions_.empty()) {
    regions_.push_back({root_, ts_node_start_byte(root_), ts_node_end_byte(root_), {}});
    for (TSNode statement : named_children(root_)) {
      statements_.push_back(
          {statement, ts_node_start_byte(statement), ts_node_end_byte(statement), false, {}});
      statement_nodes_.push_back(statement);
    }
  }
  return statement_nodes_;
}

void Evaluator::walk_statement(size_t index, const std::function<void(TSNode, size_t)>& visit) {
  top_level_statements();
  Statement& statement = statements_[index];
  if (statement.indexed) {
    return syntax::for_each_descendant(statement.node, [&](TSNode node, size_t depth) {
      visit(node, depth);
      return !is_plain_string(node, ts_node_type(node), source_);
    });
  }
  index_statement(statement, &visit);
}

void Evaluator::index_statement(Statement& statement,
                                const std::function<void(TSNode, size_t)>* also_visit) {
  // `open` holds the regions enclosing the cursor with the depth of the node that opened each.
  std::vector<std::pair<size_t, uint32_t>> open;
  // Returns whether the node's children need a visit.
  auto consider = [&](TSNode node, size_t depth) {
    while (!open.empty() && open.back().first >= depth) open.pop_back();
    if (!ts_node_is_named(node)) return false;
    const char* type = ts_node_type(node);
    if (!(syntax::type_is(type, "function_definition") || syntax::type_is(type, "lambda") ||
          is_comprehension_type(type)))
      return !is_plain_string(node, type, source_);
    const auto index = static_cast<uint32_t>(regions_.size());
    regions_.push_back({node, ts_node_start_byte(node), ts_node_end_byte(node), {}});
    (open.empty() ? statement.regions : regions_[open.back().second].children).push_back(index);
    open.emplace_back(depth, index);
    return true;
  };
  consider(statement.node, 0);
  if (also_visit) {
    syntax::for_each_descendant(statement.node, [&](TSNode node, size_t depth) {
      (*also_visit)(node, depth);
      return consider(node, depth);
    });
  } else {
    syntax::for_each_descendant(statement.node, consider);
  }
  statement.indexed = true;
}

std::vector<uint32_t> Evaluator::regions_at(uint32_t offset) {
  top_level_statements();
  std::vector<uint32_t> chain = {0};
  // Only the top-level statement around `offset` is indexed, on first use: an analysis touches
  // few statements of a long file.
  auto s = std::upper_bound(statements_.begin(), statements_.end(), offset,
                            [](uint32_t off, const Statement& st) { return off < st.start; });
  if (s == statements_.begin() || offset >= std::prev(s)->end) return chain;
  Statement& statement = *std::prev(s);
  if (!statement.indexed) index_statement(statement);
  const std::vector<uint32_t>* children = &statement.regions;
  for (;;) {
    // The last child starting at or before `offset`; it encloses `offset` if it ends after it.
    auto it = std::upper_bound(children->begin(), children->end(), offset,
                               [&](uint32_t off, uint32_t r) { return off < regions_[r].start; });
    if (it == children->begin()) break;
    const uint32_t candidate = *std::prev(it);
    if (offset >= regions_[candidate].end) break;
    chain.push_back(candidate);
    children = &regions_[candidate].children;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

TSNode Evaluator::enclosing_function(uint32_t offset) {
  for (uint32_t r : regions_at(offset)) {
    if (is(regions_[r].node, "function_definition")) return regions_[r].node;
  }
  return TSNode{};
}

Value Evaluator::lookup(std::string_view name, TSNode at) {
  for (uint32_t region : regions_at(ts_node_start_byte(at))) {
    TSNode node = regions_[region].node;
    if (is_comprehension(node)) {
      for (TSNode clause : named_children(node)) {
        if (!is(clause, "for_in_clause")) continue;
        TSNode left = field(clause, "left");
        std::vector<TSNode> ids =
            is(left, "identifier") ? std::vector<TSNode>{left} : named_children(left);
        for (TSNode id : ids) {
          if (text_of(id, source_) == name) return Value::unknown("a comprehension variable");
        }
      }
      continue;
    }
    if (!is_scope(node)) continue;
    if (region == 0) module_reads_.emplace(name);
    const Scope& scope = scope_of(node);
    auto it = scope.find(std::string(name));
    if (it == scope.end()) continue;
    const std::vector<Binding>& bindings = it->second;
    Value first = eval_binding(bindings.front(), name);
    for (size_t i = 1; i < bindings.size(); ++i) {
      if (!(eval_binding(bindings[i], name) == first)) {
        return Value::unknown("`" + std::string(name) + "` is bound more than once");
      }
    }
    return first;
  }
  if (is_builtin(name)) return Value::symbol("builtins." + std::string(name));
  return Value::unknown("`" + std::string(name) + "` is not defined in this file");
}

Value Evaluator::eval_binding(const Binding& binding, std::string_view name) {
  switch (binding.kind) {
    case Binding::Kind::Parameter:
    case Binding::Kind::Opaque:
      return Value::unknown(binding.why.empty() ? "`" + std::string(name) + "`" : binding.why);
    case Binding::Kind::Import:
      return Value::symbol(binding.qualified);
    case Binding::Kind::Definition:
      return Value::callable(binding.value);
    case Binding::Kind::Value:
      break;
  }
  const uint64_t key =
      node_key(binding.value) ^ (static_cast<uint64_t>(binding.unpack_index + 1) << 40);
  if (auto hit = memo_.find(key); hit != memo_.end()) return hit->second;
  if (in_progress_.count(key))
    return Value::unknown("`" + std::string(name) + "` refers to itself");
  in_progress_.insert(key);
  Value v = eval(binding.value);
  in_progress_.erase(key);
  if (binding.unpack_index >= 0) {
    if (v.is(Value::Kind::Tuple) && static_cast<size_t>(binding.unpack_index) < v.items->size()) {
      // Copy the element out first: assigning it straight to `v` would free the tuple that
      // holds it halfway through the assignment.
      Value element = (*v.items)[static_cast<size_t>(binding.unpack_index)];
      v = std::move(element);

    } else {
      v = Value::unknown("`" + std::string(name) + "` comes from unpacking " +
                         std::string(text_of(binding.value, source_)));
    }
  }
  // A binding's value does not depend on where it is used, so each is evaluated once; a result
  // cut short by the depth limit is not final and is not remembered.
  if (!depth_limited_) memo_.emplace(key, v);
  return v;
}

// ----- expressions --------------------------------------------------------------------------

std::string Evaluator::qualified_name(TSNode expression) {
  Value v = eval(expression);
  return v.is(Value::Kind::Symbol) ? v.text : "";
}

Value Evaluator::eval(TSNode node) {
  if (ts_node_is_null(node)) return Value::unknown("missing");
  if (depth_ > kMaxDepth) {
    depth_limited_ = true;
    return Value::unknown("too deeply nested");
  }
  if (depth_ == 0) depth_limited_ = false;
  ++depth_;
  struct Guard {
    int& d;
    ~Guard() { --d; }
  } guard{depth_};

  node = unparen(node);
  const char* type = ts_node_type(node);
  std::string_view t = type;
  if (t == "integer") {
    if (auto i = parse_int(text_of(node, source_))) return Value::integer(*i);
    return Value::unknown("integer literal out of range");
  }
  if (t == "float") {
    std::string s(text_of(node, source_));
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    try {
      return Value::floating(std::stod(s));
    } catch (...) {
      return Value::unknown("float literal");
    }
  }
  if (t == "true") return Value::boolean(true);
  if (t == "false") return Value::boolean(false);
  if (t == "none") return Value::none();
  if (t == "string" || t == "concatenated_string") {
    if (auto s = string_content(node, source_)) return Value::string(*s);
    return Value::unknown("formatted string");
  }
  if (t == "identifier") return lookup(text_of(node, source_), node);
  if (t == "tuple" || t == "list" || t == "expression_list") return eval_sequence(node);
  if (t == "dictionary") {
    std::vector<std::pair<Value, Value>> entries;
    for (TSNode pair : named_children(node)) {
      if (!is(pair, "pair")) return Value::unknown("dict with ** entries");
      entries.emplace_back(eval(field(pair, "key")), eval(field(pair, "value")));
    }
    return Value::dict(std::move(entries));
  }
  if (t == "attribute") return eval_attribute(node);
  if (t == "subscript") return eval_subscript(node);
  if (t == "binary_operator") return eval_binary(node);
  if (t == "unary_operator") {
    Value v = eval(field(node, "argument"));
    std::string_view op = text_of(field(node, "operator"), source_);
    if (v.is(Value::Kind::Int)) {
      if (op == "-") return Value::integer(-v.int_value);
      if (op == "+") return v;
      if (op == "~") return Value::integer(~v.int_value);
    }
    if (v.is(Value::Kind::Float)) {
      if (op == "-") return Value::floating(-v.float_value);
      if (op == "+") return v;
    }
    return Value::unknown(std::string(text_of(node, source_)));
  }
  if (t == "conditional_expression") {
    auto parts = named_children(node);  // body, condition, alternative
    if (parts.size() == 3) {
      Value cond = eval(parts[1]);
      if (cond.is(Value::Kind::Bool)) return eval(cond.bool_value ? parts[0] : parts[2]);
      Value a = eval(parts[0]);
      if (a == eval(parts[2])) return a;
    }
    return Value::unknown("a conditional expression");
  }
  if (t == "lambda") return Value::callable(node);
  if (t == "call") return eval_call(node);
  if (t == "list_comprehension") {
    // `[spec for _ in range(n)]` with a known n: n copies of the element.
    TSNode body = field(node, "body");
    auto children = named_children(node);
    if (children.size() == 2 && is(children[1], "for_in_clause")) {
      Value range = eval(field(children[1], "right"));
      if (range.is(Value::Kind::Tuple)) {
        Value element = eval(body);
        return Value::tuple(std::vector<Value>(range.items->size(), element));
      }
    }
    return Value::unknown("a list comprehension");
  }
  return Value::unknown(std::string(text_of(node, source_)));
}

Value Evaluator::eval_sequence(TSNode node) {
  std::vector<Value> items;
  for (TSNode child : named_children(node)) {
    if (is(child, "list_splat")) {
      Value inner = eval(ts_node_named_child(child, 0));
      if (!inner.is(Value::Kind::Tuple)) return Value::unknown("a starred element");
      items.insert(items.end(), inner.items->begin(), inner.items->end());
    } else {
      items.push_back(eval(child));
    }
  }
  return Value::tuple(std::move(items));
}

Value Evaluator::eval_attribute(TSNode node) {
  Value object = eval(field(node, "object"));
  std::string attr(text_of(field(node, "attribute"), source_));
  if (object.is(Value::Kind::Symbol)) return Value::symbol(object.text + "." + attr);
  if (object.is(Value::Kind::Call) && object.names("ShapeDtypeStruct")) {
    TSNode args = field(object.node, "arguments");
    auto list = named_children(args);
    const size_t position = attr == "shape" ? 0 : attr == "dtype" ? 1 : 99;
    for (TSNode a : list) {
      if (is(a, "keyword_argument") && text_of(field(a, "name"), source_) == attr) {
        return eval(field(a, "value"));
      }
    }
    if (position < list.size() && !is(list[position], "keyword_argument"))
      return eval(list[position]);
  }
  if (object.is(Value::Kind::Tuple) && attr == "__len__") return Value::unknown("len");
  return Value::unknown(std::string(text_of(node, source_)));
}

Value Evaluator::eval_subscript(TSNode node) {
  Value container = eval(field(node, "value"));
  TSNode index_node = field(node, "subscript");
  if (is(index_node, "slice")) {
    if (!container.is(Value::Kind::Tuple))
      return Value::unknown(std::string(text_of(node, source_)));
    // start:stop (no step) on a known tuple
    std::optional<int64_t> start, stop;
    bool seen_colon = false;
    for (uint32_t i = 0; i < ts_node_child_count(index_node); ++i) {
      TSNode c = ts_node_child(index_node, i);
      if (!ts_node_is_named(c)) {
        if (text_of(c, source_) == ":") {
          if (seen_colon) return Value::unknown("a slice with a step");
          seen_colon = true;
        }
        continue;
      }
      auto v = eval(c).as_int();
      if (!v) return Value::unknown(std::string(text_of(node, source_)));
      (seen_colon ? stop : start) = v;
    }
    const auto n = static_cast<int64_t>(container.items->size());
    auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
    const int64_t b = clamp(start.value_or(0));
    const int64_t e = clamp(stop.value_or(n));
    std::vector<Value> out;
    for (int64_t i = b; i < e; ++i) out.push_back((*container.items)[static_cast<size_t>(i)]);
    return Value::tuple(std::move(out));
  }
  Value index = eval(index_node);
  if (container.is(Value::Kind::Tuple)) {
    if (auto i = index.as_int()) {
      const auto n = static_cast<int64_t>(container.items->size());
      const int64_t k = *i < 0 ? *i + n : *i;
      if (k >= 0 && k < n) return (*container.items)[static_cast<size_t>(k)];
    }
  }
  if (container.is(Value::Kind::Dict) && index.known()) {
    for (const auto& [k, v] : *container.entries) {
      if (k == index) return v;
    }
    return Value::unknown("no key " + index.render());
  }
  return Value::unknown(std::string(text_of(node, source_)));
}

Value Evaluator::eval_binary(TSNode node) {
  Value a = eval(field(node, "left"));
  Value b = eval(field(node, "right"));
  std::string_view op = text_of(field(node, "operator"), source_);
  if (a.is(Value::Kind::Int) && b.is(Value::Kind::Int)) {
    // Python integers do not overflow; a result that does not fit int64 is unknown, not wrapped.
    const int64_t x = a.int_value, y = b.int_value;
    // Made only when needed: most operations fit, and the message copies the text.
    auto overflow_value = [&] {
      return Value::unknown("integer overflow in " + std::string(text_of(node, source_)));
    };
    int64_t r = 0;
    if (op == "+") return __builtin_add_overflow(x, y, &r) ? overflow_value() : Value::integer(r);
    if (op == "-") return __builtin_sub_overflow(x, y, &r) ? overflow_value() : Value::integer(r);
    if (op == "*") return __builtin_mul_overflow(x, y, &r) ? overflow_value() : Value::integer(r);
    const bool divisible = y != 0 && !(x == INT64_MIN && y == -1);
    if (op == "//") return divisible ? Value::integer(floor_div(x, y)) : overflow_value();
    if (op == "%") return divisible ? Value::integer(x - floor_div(x, y) * y) : overflow_value();
    if (op == "/" && y != 0)
      return Value::floating(static_cast<double>(x) / static_cast<double>(y));
    if (op == "**" && y >= 0) {
      if (x == 0) return Value::integer(y == 0 ? 1 : 0);
      if (x == 1) return Value::integer(1);
      if (x == -1) return Value::integer(y % 2 == 0 ? 1 : -1);
      r = 1;
      for (int64_t i = 0; i < y; ++i) {  // |x| >= 2 overflows within 63 steps
        if (__builtin_mul_overflow(r, x, &r)) return overflow_value();
      }
      return Value::integer(r);
    }
    if (op == "<<" && y >= 0) {
      if (y >= 63 || x > (INT64_MAX >> y) || x < (INT64_MIN >> y)) return overflow_value();
      return Value::integer(static_cast<int64_t>(static_cast<uint64_t>(x) << y));
    }
    if (op == ">>" && y >= 0) return Value::integer(y >= 63 ? (x < 0 ? -1 : 0) : x >> y);
  }
  auto num = [](const Value& v) -> std::optional<double> {
    if (v.is(Value::Kind::Int)) return static_cast<double>(v.int_value);
    if (v.is(Value::Kind::Float)) return v.float_value;
    return std::nullopt;
  };
  if (auto x = num(a), y = num(b); x && y) {
    if (op == "+") return Value::floating(*x + *y);
    if (op == "-") return Value::floating(*x - *y);
    if (op == "*") return Value::floating(*x * *y);
    if (op == "/" && *y != 0) return Value::floating(*x / *y);
    if (op == "**") return Value::floating(std::pow(*x, *y));
  }
  if (a.is(Value::Kind::Tuple) && b.is(Value::Kind::Tuple) && op == "+") {
    std::vector<Value> items(*a.items);
    items.insert(items.end(), b.items->begin(), b.items->end());
    return Value::tuple(std::move(items));
  }
  if (op == "*" && (a.is(Value::Kind::Tuple) || b.is(Value::Kind::Tuple))) {
    const Value& seq = a.is(Value::Kind::Tuple) ? a : b;
    auto count = (a.is(Value::Kind::Tuple) ? b : a).as_int();
    if (count && *count >= 0 && *count < 4096) {
      std::vector<Value> items;
      for (int64_t i = 0; i < *count; ++i)
        items.insert(items.end(), seq.items->begin(), seq.items->end());
      return Value::tuple(std::move(items));
    }
  }
  return Value::unknown(std::string(text_of(node, source_)));
}

Value Evaluator::eval_call(TSNode node) {
  Value callee = eval(field(node, "function"));
  TSNode args_node = field(node, "arguments");
  std::vector<TSNode> positional;
  std::vector<std::pair<std::string_view, TSNode>> keywords;
  for (TSNode a : named_children(args_node)) {
    if (is(a, "keyword_argument")) {
      keywords.emplace_back(text_of(field(a, "name"), source_), field(a, "value"));
    } else {
      positional.push_back(a);
    }
  }
  if (callee.is(Value::Kind::Symbol)) {
    const std::string& q = callee.text;
    auto all_ints = [&](std::vector<int64_t>& out) {
      for (TSNode p : positional) {
        auto v = eval(p).as_int();
        if (!v) return false;
        out.push_back(*v);
      }
      return !out.empty();
    };
    if (q == "builtins.min" || q == "builtins.max") {
      std::vector<int64_t> xs;
      if (positional.size() == 1) {
        Value seq = eval(positional[0]);
        if (seq.is(Value::Kind::Tuple)) {
          for (const Value& v : *seq.items) {
            if (!v.as_int()) return Value::unknown("min/max of unknowns");
            xs.push_back(*v.as_int());
          }
        }
      } else if (!all_ints(xs)) {
        return Value::unknown(std::string(text_of(node, source_)));
      }
      if (xs.empty()) return Value::unknown(std::string(text_of(node, source_)));
      return Value::integer(q == "builtins.min" ? *std::min_element(xs.begin(), xs.end())
                                                : *std::max_element(xs.begin(), xs.end()));
    }
    if (q == "builtins.len" && positional.size() == 1) {
      Value seq = eval(positional[0]);
      if (seq.is(Value::Kind::Tuple))
        return Value::integer(static_cast<int64_t>(seq.items->size()));
      if (seq.is(Value::Kind::Dict))
        return Value::integer(static_cast<int64_t>(seq.entries->size()));
    }
    if (q == "builtins.int" && positional.size() == 1) {
      Value v = eval(positional[0]);
      if (v.is(Value::Kind::Int)) return v;
      if (v.is(Value::Kind::Float)) return Value::integer(static_cast<int64_t>(v.float_value));
    }
    if ((q == "builtins.tuple" || q == "builtins.list") && positional.size() == 1) {
      Value v = eval(positional[0]);
      if (v.is(Value::Kind::Tuple)) return v;
    }
    if (q == "builtins.range") {
      std::vector<int64_t> xs;
      if (all_ints(xs) && xs.size() <= 3) {
        int64_t start = xs.size() >= 2 ? xs[0] : 0;
        int64_t stop = xs.size() >= 2 ? xs[1] : xs[0];
        int64_t step = xs.size() == 3 ? xs[2] : 1;
        if (step != 0 && (stop - start) / step < 4096) {
          std::vector<Value> items;
          for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
            items.push_back(Value::integer(i));
          return Value::tuple(std::move(items));
        }
      }
    }
    if (q == "builtins.dict" && positional.empty()) {
      std::vector<std::pair<Value, Value>> entries;
      for (auto& [k, v] : keywords) entries.emplace_back(Value::string(std::string(k)), eval(v));
      return Value::dict(std::move(entries));
    }
    if ((callee.names("cdiv") || q == "math.ceil") && positional.size() == 2) {
      auto a = eval(positional[0]).as_int();
      auto b = eval(positional[1]).as_int();
      if (a && b && *b != 0) return Value::integer(-floor_div(-*a, *b));
    }
    if ((q == "math.prod" || q == "numpy.prod") && positional.size() == 1) {
      Value seq = eval(positional[0]);
      if (seq.is(Value::Kind::Tuple)) {
        int64_t r = 1;
        for (const Value& v : *seq.items) {
          if (!v.as_int()) return Value::unknown("prod of unknowns");
          r *= *v.as_int();
        }
        return Value::integer(r);
      }
    }
    if (q.rfind("builtins.", 0) == 0) return Value::unknown(std::string(text_of(node, source_)));
    return Value::call(q, node);
  }
  if (callee.is(Value::Kind::Callable)) return Value::call("", node);
  return Value::unknown(std::string(text_of(node, source_)));
}

}  // namespace mk::pallas
