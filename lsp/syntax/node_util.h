// Small helpers over tree-sitter nodes, so analysis code reads like the grammar.
#pragma once

#include <tree_sitter/api.h>

#include <cstring>
#include <string_view>
#include <vector>

namespace mk::syntax {

inline bool is(TSNode node, const char* type) {
  return !ts_node_is_null(node) && std::strcmp(ts_node_type(node), type) == 0;
}

inline std::string_view text_of(TSNode node, std::string_view source) {
  if (ts_node_is_null(node)) return {};
  const uint32_t start = ts_node_start_byte(node);
  const uint32_t end = ts_node_end_byte(node);
  if (start > source.size() || end > source.size() || end < start) return {};
  return source.substr(start, end - start);
}

inline TSNode field(TSNode node, const char* name) {
  return ts_node_child_by_field_name(node, name, static_cast<uint32_t>(std::strlen(name)));
}

inline std::vector<TSNode> named_children(TSNode node) {
  std::vector<TSNode> out;
  if (ts_node_is_null(node)) return out;
  const uint32_t n = ts_node_named_child_count(node);
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode child = ts_node_named_child(node, i);
    if (!is(child, "comment")) out.push_back(child);
  }
  return out;
}

inline bool same_node(TSNode a, TSNode b) {
  return ts_node_start_byte(a) == ts_node_start_byte(b) &&
         ts_node_end_byte(a) == ts_node_end_byte(b) && ts_node_symbol(a) == ts_node_symbol(b);
}

// Strips any number of enclosing parentheses.
inline TSNode unparen(TSNode node) {
  while (is(node, "parenthesized_expression") && ts_node_named_child_count(node) == 1) {
    node = ts_node_named_child(node, 0);
  }
  return node;
}

}  // namespace mk::syntax
