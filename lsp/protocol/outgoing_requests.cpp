#include "lsp/protocol/outgoing_requests.h"

#include <spdlog/spdlog.h>

namespace mk::rpc {

void OutgoingRequests::send(const std::string& method, json params, Callback callback,
                            std::chrono::milliseconds timeout) {
  if (pending_.size() >= max_pending_) {
    const Error e{error_code::kRequestFailed, "too many requests pending on the client"};
    callback(nullptr, &e);
    return;
  }
  const std::string id = "mk-" + std::to_string(next_id_++);
  pending_[id] = {method, std::move(callback), Clock::now() + timeout};
  send_(make_request(id, method, std::move(params)));
}

bool OutgoingRequests::handle_response(const json& message) {
  if (!message.contains("id") || !message["id"].is_string()) return false;
  auto it = pending_.find(message["id"].get<std::string>());
  if (it == pending_.end()) return false;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (message.contains("error") && message["error"].is_object()) {
    const json& e = message["error"];
    Error err{e.value("code", error_code::kInternalError),
              e.value("message", std::string("client error"))};
    p.callback(nullptr, &err);
  } else {
    static const json kNull = nullptr;
    p.callback(message.contains("result") ? &message["result"] : &kNull, nullptr);
  }
  return true;
}

std::optional<OutgoingRequests::Clock::time_point> OutgoingRequests::expire(Clock::time_point now) {
  std::optional<Clock::time_point> next;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.deadline <= now) {
      Pending p = std::move(it->second);
      it = pending_.erase(it);
      spdlog::warn("client did not answer {} in time", p.method);
      const Error e{error_code::kRequestFailed,
                    "the client did not answer " + p.method + " in time"};
      p.callback(nullptr, &e);
    } else {
      if (!next || it->second.deadline < *next) next = it->second.deadline;
      ++it;
    }
  }
  return next;
}

void OutgoingRequests::fail_all(const std::string& why) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    const Error e{error_code::kRequestFailed, why};
    p.callback(nullptr, &e);
  }
}

}  // namespace mk::rpc
