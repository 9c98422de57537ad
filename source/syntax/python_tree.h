// A tree-sitter parse of one Python document, reparsed incrementally on every edit.
#pragma once

#include <tree_sitter/api.h>

#include <memory>
#include <string>

#include "source/text/text_document.h"

extern "C" const TSLanguage* tree_sitter_python();

namespace mk::syntax {

struct TreeDeleter {
  void operator()(TSTree* tree) const { ts_tree_delete(tree); }
};
struct ParserDeleter {
  void operator()(TSParser* parser) const { ts_parser_delete(parser); }
};

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
  // Tells tree-sitter about an edit already applied to `text`, then reparses reusing the old tree.
  void edit_and_reparse(const text::ByteEdit& edit, const std::string& text);

  TSNode root() const { return ts_tree_root_node(tree_.get()); }
  bool has_error() const { return ts_node_has_error(root()); }
  const TSTree* tree() const { return tree_.get(); }

 private:
  std::unique_ptr<TSParser, ParserDeleter> parser_;
  std::unique_ptr<TSTree, TreeDeleter> tree_;
};

}  // namespace mk::syntax
