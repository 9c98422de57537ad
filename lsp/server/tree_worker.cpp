#include "lsp/server/tree_worker.h"

#include <memory>

namespace mk::server {

void TreeWorker::parse_in_full(const std::string& text, syntax::TreePtr partial, Done done) {
  // std::function needs copyable captures: the text and trees travel in shared holders.
  auto job_text = std::make_shared<const std::string>(text);
  auto old = std::make_shared<syntax::TreePtr>(std::move(partial));
  auto job = [post = post_, job_text, old, done = std::move(done)] {
    auto full = std::make_shared<syntax::TreePtr>(syntax::parse_python(*job_text, std::move(*old)));
    post([full, done] { done(std::move(*full)); });
  };
  if (held_) {
    waiting_.push_back(std::move(job));
  } else {
    pool_.submit(std::move(job));
  }
}

void TreeWorker::release(syntax::TreePtr tree) {
  if (!tree) return;
  auto held = std::make_shared<syntax::TreePtr>(std::move(tree));
  pool_.submit([held] { held->reset(); });
}

void TreeWorker::hold(bool held) {
  held_ = held;
  if (held_) return;
  for (auto& job : waiting_) pool_.submit(std::move(job));
  waiting_.clear();
}

}  // namespace mk::server
