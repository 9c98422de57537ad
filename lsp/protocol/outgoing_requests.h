// Server-to-client requests (workspace/configuration, applyEdit, showMessageRequest, ...): a
// capped table of pending callbacks, each answered by the client's response or by a timeout.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "lsp/protocol/json_rpc.h"

namespace mk::rpc {

class OutgoingRequests {
 public:
  using Clock = std::chrono::steady_clock;
  // Exactly one of result / error is set.
  using Callback = std::function<void(const json* result, const Error* error)>;

  OutgoingRequests(std::function<void(const json&)> send, size_t max_pending = 64)
      : send_(std::move(send)), max_pending_(max_pending) {}

  // Sends the request now; `callback` runs later on the caller's thread via handle_response or
  // expire. When too many are pending, the callback runs at once with an error.
  void send(const std::string& method, json params, Callback callback,
            std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Routes a response message; false if its id is not ours (late or unknown).
  bool handle_response(const json& message);
  // Fails every request whose deadline has passed; returns the next deadline, if any.
  std::optional<Clock::time_point> expire(Clock::time_point now);
  // Fails every pending request (client gone).
  void fail_all(const std::string& why);
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    std::string method;
    Callback callback;
    Clock::time_point deadline;
  };
  std::function<void(const json&)> send_;
  size_t max_pending_;
  int64_t next_id_ = 1;
  std::map<std::string, Pending> pending_;
};

}  // namespace mk::rpc
