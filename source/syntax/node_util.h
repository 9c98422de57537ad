// Small helpers over tree-sitter nodes, so analysis code reads like the grammar.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mk::syntax {

// Whether node type `actual` is `type`; a node's type fetched once can be tested many times.
inline bool type_is(const char* actual, const char* type) {
  return actual[0] == type[0] && std::strcmp(actual, type) == 0;  // most calls differ at once
}

inline bool is(TSNode node, const char* type) {
  return !ts_node_is_null(node) && type_is(ts_node_type(node), type);
}

inline std::string_view text_of(TSNode node, std::string_view source) {
  if (ts_node_is_null(node)) return {};
  const uint32_t start = ts_node_start_byte(node);
  const uint32_t end = ts_node_end_byte(node);
  if (start > source.size() || end > source.size() || end < start) return {};
  return source.substr(start, end - start);
}

// By field id, remembered per name: tree-sitter finds an id by comparing the name with each of
// the grammar's field names in turn, which cost more than the child lookup itself.
inline TSNode field(TSNode node, const char* name) {
  struct Remembered {
    const char* name = nullptr;
    const TSLanguage* language = nullptr;
    TSFieldId id = 0;
  };
  thread_local Remembered remembered[64];
  const TSLanguage* language = ts_node_language(node);
  Remembered& r = remembered[(reinterpret_cast<uintptr_t>(name) >> 3) & 63];
  // The pointer picks the slot; the id's own name confirms it (a name need not be a literal).
  if (r.name != name || r.language != language || r.id == 0 ||
      std::strcmp(ts_language_field_name_for_id(language, r.id), name) != 0) {
    r = {name, language,
         ts_language_field_id_for_name(language, name, static_cast<uint32_t>(std::strlen(name)))};
  }
  return r.id == 0 ? TSNode{} : ts_node_child_by_field_id(node, r.id);
}

inline std::vector<TSNode> named_children(TSNode node) {
  std::vector<TSNode> out;
  if (ts_node_is_null(node)) return out;
  // A cursor walks the siblings once; ts_node_named_child(i) would rescan from the first child.
  TSTreeCursor cursor = ts_tree_cursor_new(node);
  if (ts_tree_cursor_goto_first_child(&cursor)) {
    do {
      TSNode child = ts_tree_cursor_current_node(&cursor);
      if (ts_node_is_named(child) && !is(child, "comment")) out.push_back(child);
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  ts_tree_cursor_delete(&cursor);
  return out;
}

inline bool same_node(TSNode a, TSNode b) {
  return ts_node_start_byte(a) == ts_node_start_byte(b) &&
         ts_node_end_byte(a) == ts_node_end_byte(b) && ts_node_symbol(a) == ts_node_symbol(b);
}

// Visits every descendant of `root` (not `root` itself) in pre-order, with its depth below
// `root` (children are at depth 1). Iterative with a cursor, so deeply nested code cannot exhaust
// the stack, and no child is looked up by index (which rescans its siblings). A `visit` that
// returns bool says whether to go into the node's children.
template <typename Visit>
void for_each_descendant(TSNode root, Visit visit) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  size_t depth = 0;
  bool descend = true;
  for (;;) {
    if (descend && ts_tree_cursor_goto_first_child(&cursor)) {
      ++depth;
    } else {
      bool more = false;
      while (depth > 0 && !(more = ts_tree_cursor_goto_next_sibling(&cursor))) {
        ts_tree_cursor_goto_parent(&cursor);
        --depth;
      }
      if (!more) break;
    }
    const TSNode node = ts_tree_cursor_current_node(&cursor);
    if constexpr (std::is_same_v<decltype(visit(node, depth)), bool>) {
      descend = visit(node, depth);
    } else {
      visit(node, depth);
    }
  }
  ts_tree_cursor_delete(&cursor);
}

// Strips any number of enclosing parentheses.

inline TSNode unparen(TSNode node) {
  while (is(node, "parenthesized_expression") && ts_node_named_child_count(node) == 1) {
    node = ts_node_named_child(node, 0);
  }
  return node;
}

}  // namespace mk::syntax
