// The main loop's inbox: messages from the reader thread and tasks posted by other threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <variant>

#include <nlohmann/json.hpp>

namespace mk::rpc {

struct EndOfInput {};
using Task = std::function<void()>;
using Event = std::variant<nlohmann::json, Task, EndOfInput>;

class MessageQueue {
 public:
  void push(Event event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }

  // Waits until an event arrives or `deadline` passes (nullopt on timeout).
  std::optional<Event> pop(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ready_.wait_until(lock, deadline, [&] { return !events_.empty(); })) return std::nullopt;
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }

  bool empty() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_.empty();
  }

  // True if a queued message satisfies `predicate` (used to spot edits that make a request stale).
  bool any_message(const std::function<bool(const nlohmann::json&)>& predicate) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Event& e : events_) {
      if (const auto* m = std::get_if<nlohmann::json>(&e); m && predicate(*m)) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
};

}  // namespace mk::rpc
