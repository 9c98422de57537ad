#include "source/syntax/module_layout.h"

#include "source/syntax/node_util.h"

namespace mk::syntax {

namespace {

// A decorated definition wraps the def: look through it.
TSNode definition_of(TSNode statement) {
  if (is(statement, "decorated_definition")) return field(statement, "definition");
  return statement;
}

void add_targets(TSNode target, std::string_view source, std::set<std::string>& names) {
  if (is(target, "identifier")) {
    names.insert(std::string(text_of(target, source)));
    return;
  }
  if (is(target, "pattern_list") || is(target, "tuple_pattern") || is(target, "list_pattern"))
    for (TSNode child : named_children(target)) add_targets(child, source, names);
}

}  // namespace

std::optional<ByteSpan> top_level_function(const PythonTree& tree, std::string_view source,
                                           std::string_view name) {
  for (TSNode statement : named_children(tree.root())) {
    TSNode def = definition_of(statement);
    if (!is(def, "function_definition")) continue;
    if (text_of(field(def, "name"), source) != name) continue;
    return ByteSpan{ts_node_start_byte(statement), ts_node_end_byte(statement)};
  }
  return std::nullopt;
}

std::set<std::string> top_level_names(const PythonTree& tree, std::string_view source) {
  std::set<std::string> names;
  for (TSNode statement : named_children(tree.root())) {
    TSNode def = definition_of(statement);
    if (is(def, "function_definition") || is(def, "class_definition")) {
      names.insert(std::string(text_of(field(def, "name"), source)));
    } else if (is(statement, "expression_statement")) {
      for (TSNode e : named_children(statement))
        if (is(e, "assignment") || is(e, "augmented_assignment"))
          add_targets(field(e, "left"), source, names);
    } else if (is(statement, "import_statement") || is(statement, "import_from_statement")) {
      for (TSNode child : named_children(statement)) {
        if (is(child, "aliased_import")) {
          names.insert(std::string(text_of(field(child, "alias"), source)));
        } else if (is(child, "dotted_name") && !same_node(child, field(statement, "module_name"))) {
          const std::string_view dotted = text_of(child, source);
          names.insert(std::string(dotted.substr(0, dotted.find('.'))));
        }
      }
    }
  }
  return names;
}

uint32_t end_of_imports(const PythonTree& tree, std::string_view source) {
  uint32_t end = 0;
  for (TSNode statement : named_children(tree.root())) {
    const bool is_import = is(statement, "import_statement") ||
                           is(statement, "import_from_statement") ||
                           is(statement, "future_import_statement");
    // A module docstring may come first.
    const bool docstring = end == 0 && is(statement, "expression_statement") &&
                           named_children(statement).size() == 1 &&
                           is(named_children(statement)[0], "string");
    if (is_import) {
      end = ts_node_end_byte(statement);
    } else if (!docstring) {
      break;
    }
  }
  (void)source;
  return end;
}

}  // namespace mk::syntax
