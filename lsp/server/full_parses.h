// The full parse of a document whose first parse covered only its kernels: made on a thread of
// its own, so the main loop never waits for it, and handed back to the main loop to adopt.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lsp/server/background.h"
#include "source/syntax/python_tree.h"

namespace mk::server {

class FullParses {
 public:
  using Post = std::function<void(std::function<void()>)>;  // runs a task on the main loop
  using Done = std::function<void(syntax::TreePtr)>;

  explicit FullParses(Post post) : post_(std::move(post)) {}

  // Parses `text` in full, reusing `partial` (a copy of its partial tree); `done` gets the tree
  // on the main loop.
  void start(const std::string& text, syntax::TreePtr partial, Done done);
  // Tests: while held, parses wait; releasing starts them in order.
  void hold(bool held);

 private:
  Post post_;
  bool held_ = false;
  std::vector<std::function<void()>> waiting_;
  BackgroundPool pool_{1};  // last: its threads stop before the members above go
};

}  // namespace mk::server
