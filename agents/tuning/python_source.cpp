#include "agents/tuning/python_source.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "source/syntax/node_util.h"
#include "source/syntax/python_tree.h"

namespace mk::agents {

using syntax::field;
using syntax::is;
using syntax::named_children;
using syntax::text_of;

ParseCheck check_python_syntax(const std::string& source) {
  syntax::PythonTree tree;
  tree.parse(source);
  if (!tree.has_error()) return {};
  ParseCheck result;
  result.ok = false;
  TSNode bad{};
  bool found = false;
  syntax::for_each_descendant(tree.root(), [&](TSNode node, size_t) {
    if (found) return;
    if (is(node, "ERROR") || ts_node_is_missing(node)) {
      bad = node;
      found = true;
    }
  });
  if (!found) {
    result.error = "syntax error";
    return result;
  }
  const TSPoint at = ts_node_start_point(bad);
  std::string near(text_of(bad, source).substr(0, 40));
  std::replace(near.begin(), near.end(), '\n', ' ');
  result.error = "line " + std::to_string(at.row + 1) + ", column " +
                 std::to_string(at.column + 1) + ": " +
                 (ts_node_is_missing(bad) ? "missing `" + std::string(ts_node_type(bad)) + "`"
                                          : "syntax error near `" + near + "`");
  return result;
}

bool mentions_pallas_call(const std::string& source) {
  syntax::PythonTree tree;
  tree.parse(source);
  bool found = false;
  syntax::for_each_descendant(tree.root(), [&](TSNode node, size_t) {
    if (!found && is(node, "identifier") && text_of(node, source) == "pallas_call") found = true;
  });
  return found;
}

std::string apply_edits(const std::string& source, std::vector<SourceEdit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const SourceEdit& a, const SourceEdit& b) { return a.start < b.start; });
  std::string out;
  uint32_t at = 0;
  for (const SourceEdit& edit : edits) {
    if (edit.start < at || edit.end < edit.start || edit.end > source.size()) {
      throw std::invalid_argument("overlapping or out-of-range source edit at byte " +
                                  std::to_string(edit.start));
    }
    out.append(source, at, edit.start - at);
    out += edit.text;
    at = edit.end;
  }
  out.append(source, at, std::string::npos);
  return out;
}

namespace {

// The text inside a plain string literal ('x', "x"); nullopt for f-strings, concatenations etc.
std::optional<std::string> string_value(TSNode node, std::string_view source) {
  if (!is(node, "string")) return std::nullopt;
  std::string_view text = text_of(node, source);
  if (text.size() < 2) return std::nullopt;
  const char quote = text.front();
  if ((quote != '"' && quote != '\'') || text.back() != quote) return std::nullopt;
  return std::string(text.substr(1, text.size() - 2));
}

void read_dict(TSNode dict, std::string_view source, TunedParamsDict& out) {
  out = {};
  out.open_brace = ts_node_start_byte(dict);
  out.close_brace = ts_node_end_byte(dict) - 1;
  out.multiline = ts_node_start_point(dict).row != ts_node_end_point(dict).row;
  // A comma right before the closing brace (skipping whitespace and comments).
  const uint32_t child_count = ts_node_child_count(dict);
  if (child_count >= 2) {
    TSNode before_close = ts_node_child(dict, child_count - 2);
    while (is(before_close, "comment")) before_close = ts_node_prev_sibling(before_close);
    out.trailing_comma = text_of(before_close, source) == ",";
  }
  for (TSNode pair : named_children(dict)) {
    if (!is(pair, "pair")) continue;
    auto key = string_value(field(pair, "key"), source);
    TSNode value = field(pair, "value");
    if (!key || ts_node_is_null(value)) continue;
    if (out.entries.empty() && out.multiline) {
      const TSPoint p = ts_node_start_point(pair);
      out.entry_indent.assign(p.column, ' ');
    }
    out.entries.push_back({*key, ts_node_start_byte(value), ts_node_end_byte(value),
                           std::string(text_of(value, source))});
  }
}

}  // namespace

ModuleConstants read_module_constants(const std::string& source) {
  syntax::PythonTree tree;
  tree.parse(source);
  ModuleConstants out;
  for (TSNode statement : named_children(tree.root())) {
    if (!is(statement, "expression_statement")) continue;
    for (TSNode assignment : named_children(statement)) {
      if (!is(assignment, "assignment")) continue;
      TSNode left = field(assignment, "left");
      TSNode right = field(assignment, "right");
      if (ts_node_is_null(right) || is(right, "assignment")) continue;  // chained: skip
      if (is(left, "identifier")) {
        const std::string name(text_of(left, source));
        out.bindings.push_back({name, ts_node_start_byte(right), ts_node_end_byte(right),
                                std::string(text_of(right, source)), false});
        if (name == "TUNED_PARAMS") {
          if (is(right, "dictionary")) {
            TunedParamsDict dict;
            read_dict(right, source, dict);
            out.tuned_params = std::move(dict);
          } else {
            out.tuned_params.reset();  // rebound to something we cannot edit
          }
        }
      } else if ((is(left, "pattern_list") || is(left, "tuple_pattern")) &&
                 (is(right, "expression_list") || is(right, "tuple"))) {
        auto names = named_children(left);
        auto values = named_children(right);
        if (names.size() != values.size()) continue;
        for (size_t i = 0; i < names.size(); ++i) {
          if (!is(names[i], "identifier")) continue;
          out.bindings.push_back({std::string(text_of(names[i], source)),
                                  ts_node_start_byte(values[i]), ts_node_end_byte(values[i]),
                                  std::string(text_of(values[i], source)), true});
        }
      }
    }
  }
  return out;
}

namespace {

std::string python_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string python_literal(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "None";
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "True" : "False";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return value.dump();
    case nlohmann::json::value_t::number_float: {
      const double d = value.get<double>();
      if (!std::isfinite(d)) throw std::invalid_argument("a non-finite number has no literal");
      std::string text = value.dump();
      if (text.find_first_of(".eE") == std::string::npos) text += ".0";
      return text;
    }
    case nlohmann::json::value_t::string:
      return python_string(value.get<std::string>());
    case nlohmann::json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + python_literal(value[i]);
      return out + "]";
    }
    case nlohmann::json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : value.items()) {
        out += (first ? "" : ", ") + python_string(k) + ": " + python_literal(v);
        first = false;
      }
      return out + "}";
    }
    default:
      throw std::invalid_argument("value " + value.dump() + " has no Python literal");
  }
}

int line_of(const std::string& source, uint32_t offset) {
  const auto end = source.begin() + std::min<size_t>(offset, source.size());
  return 1 + static_cast<int>(std::count(source.begin(), end, '\n'));
}

}  // namespace mk::agents
