#include "lsp/server/background.h"

#include <spdlog/spdlog.h>

namespace mk::server {

BackgroundPool::BackgroundPool(size_t threads) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

BackgroundPool::~BackgroundPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void BackgroundPool::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  ready_.notify_one();
}

size_t BackgroundPool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.size();
}

void BackgroundPool::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job();
    } catch (const std::exception& e) {
      spdlog::error("background job failed: {}", e.what());
    }
  }
}

}  // namespace mk::server
