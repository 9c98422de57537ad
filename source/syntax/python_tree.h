// A tree-sitter parse of one Python document, reparsed incrementally on every edit. A large
// document's first parse may cover only part of it (included ranges); the full parse, made on
// another thread, is adopted later and brought up to date with the edits made meanwhile.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "source/syntax/byte_span.h"
#include "source/text/text_document.h"

extern "C" const TSLanguage* tree_sitter_python();

namespace mk::syntax {

struct TreeDeleter {
  void operator()(TSTree* tree) const { ts_tree_delete(tree); }
};
struct ParserDeleter {
  void operator()(TSParser* parser) const { ts_parser_delete(parser); }
};
using TreePtr = std::unique_ptr<TSTree, TreeDeleter>;

// The grammar compiled into the binary; ABI 13-14 loads in the system libtree-sitter.
const TSLanguage* python_language();
uint32_t python_language_abi();

class PythonTree {
 public:
  PythonTree();
  PythonTree(PythonTree&&) noexcept = default;
  PythonTree& operator=(PythonTree&&) noexcept = default;

  // Parses from scratch.
  void parse(const std::string& text);
  // Parses only `spans` of `text` (sorted, disjoint). Node positions are still those of the whole
  // text. The tree stays partial, through edits, until adopt_full(). The `blank` spans (sorted,
  // inside `spans`, each a def's body) are read as the expression `0`, the rest of each left out
  // of the ranges: the tree has the def's header and a one-token body there, and treats the real
  // bytes as an edit that the next reparse reads (read_blanked()).
  void parse_partial(const std::string& text, const std::vector<ByteSpan>& spans,
                     const std::vector<ByteSpan>& blank = {});
  // Tells tree-sitter about an edit already applied to `text`, then reparses reusing the old tree.
  void edit_and_reparse(const text::ByteEdit& edit, const std::string& text);

  bool partial() const { return partial_; }
  // Whether the tree still holds bodies parse_partial() read as blank.
  bool blanked() const { return blanked_; }
  // Reparses what was read as blank from `text` (the same as parsed, or edited since through
  // edit_and_reparse), reusing the rest; nothing when nothing is blank.
  void read_blanked(const std::string& text);
  // New with every parse from scratch, unique across trees: a full parse made for another is stale.
  uint64_t generation() const { return generation_; }
  // A copy of the tree for another thread (trees are immutable; copies are cheap).
  TreePtr copy() const { return TreePtr(ts_tree_copy(tree_.get())); }
  // Takes `full`, a full parse of the text the partial parse was made from, applies the edits made
  // since and reparses `text` (now current) from it. Returns the partial tree, for the caller to
  // free where it costs nothing.
  [[nodiscard]] TreePtr adopt_full(TreePtr full, const std::string& text);
  // Hands the tree over (to be freed elsewhere); the PythonTree is empty until parsed again.
  [[nodiscard]] TreePtr take() { return std::move(tree_); }

  TSNode root() const { return ts_tree_root_node(tree_.get()); }
  bool has_error() const { return ts_node_has_error(root()); }
  const TSTree* tree() const { return tree_.get(); }

 private:
  // The parser reparses within the ranges the tree holds now (a partial tree's, moved by edits).
  void use_tree_ranges();

  std::unique_ptr<TSParser, ParserDeleter> parser_;
  TreePtr tree_;
  bool partial_ = false;
  bool blanked_ = false;
  uint64_t generation_ = 0;
  std::vector<text::ByteEdit> edits_since_partial_;
  // Blank bodies parse_partial() left out of the ranges, until a reparse reads them.
  std::vector<ByteSpan> gaps_;
};

// A full parse of `text` with a parser of its own, safe on any thread. `old` (a copy of the
// partial tree of the same text, or null) lets it reuse what was parsed already.
TreePtr parse_python(const std::string& text, TreePtr old = nullptr);

}  // namespace mk::syntax
