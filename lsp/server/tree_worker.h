// Syntax-tree work that would stall the main loop, done on a thread of its own: the full parse
// of a document whose first parse covered only its kernels (handed back to the main loop to
// adopt), and freeing large trees (tree-sitter frees node by node: 10-30 ms for a 300 KB file).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lsp/server/background.h"
#include "source/syntax/python_tree.h"

namespace mk::server {

class TreeWorker {
 public:
  using Post = std::function<void(std::function<void()>)>;  // runs a task on the main loop
  using Done = std::function<void(syntax::TreePtr)>;

  explicit TreeWorker(Post post) : post_(std::move(post)) {}

  // Parses `text` in full, reusing `partial` (a copy of its partial tree); `done` gets the tree
  // on the main loop.
  void parse_in_full(const std::string& text, syntax::TreePtr partial, Done done);
  // Frees `tree` off the main loop.
  void release(syntax::TreePtr tree);
  // Tests: while held, full parses wait; releasing starts them in order.
  void hold(bool held);

 private:
  Post post_;
  bool held_ = false;
  std::vector<std::function<void()>> waiting_;
  BackgroundPool pool_{1};  // last: its thread stops before the members above go
};

}  // namespace mk::server
