// Background work for the server: a small thread pool that runs host/worker jobs off the main
// loop. Jobs report back by posting tasks to the main loop, which owns all state.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mk::server {

class BackgroundPool {
 public:
  explicit BackgroundPool(size_t threads);
  ~BackgroundPool();  // finishes running jobs, drops queued ones
  BackgroundPool(const BackgroundPool&) = delete;
  BackgroundPool& operator=(const BackgroundPool&) = delete;

  void submit(std::function<void()> job);
  size_t queued() const;

 private:
  void loop();
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mk::server
