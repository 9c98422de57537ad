// Routes JSON-RPC requests and notifications to typed handlers. Every request is answered exactly
// once: a Reply that is dropped unanswered answers InternalError.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "lsp/protocol/json_rpc.h"

namespace mk::rpc {

// Set when the client cancels the request ($/cancelRequest) or the server gives up on it.
class CancellationToken {
 public:
  CancellationToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  bool cancelled() const { return flag_->load(std::memory_order_relaxed); }
  void cancel() const { flag_->store(true, std::memory_order_relaxed); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

class Reply {
 public:
  using Send = std::function<void(const json& message)>;
  Reply(json id, Send send, std::function<void()> on_done, CancellationToken token);

  void result(json value) const;
  void error(int code, const std::string& message) const;
  bool answered() const { return state_->answered; }
  const CancellationToken& token() const { return state_->token; }
  const json& id() const { return state_->id; }

 private:
  struct State {
    json id;
    Send send;
    std::function<void()> on_done;
    CancellationToken token;
    bool answered = false;
    std::mutex mutex;
    ~State();
  };
  bool claim() const;
  std::shared_ptr<State> state_;
};

class Dispatcher {
 public:
  using RequestHandler = std::function<void(const ParamReader& params, Reply reply)>;
  using NotificationHandler = std::function<void(const ParamReader& params)>;
  // Decides, before a handler runs, whether a request must be refused (e.g. not initialized).
  using Gate = std::function<std::optional<Error>(const std::string& method)>;

  explicit Dispatcher(Reply::Send send) : send_(std::move(send)) {}

  void on_request(const std::string& method, RequestHandler handler) {
    requests_[method] = std::move(handler);
  }
  void on_notification(const std::string& method, NotificationHandler handler) {
    notifications_[method] = std::move(handler);
  }
  void set_request_gate(Gate gate) { request_gate_ = std::move(gate); }
  void set_notification_gate(std::function<bool(const std::string&)> gate) {
    notification_gate_ = std::move(gate);
  }

  // Handles one incoming request or notification (responses go elsewhere). The handlers may
  // move strings out of the message (ParamReader::take_string).
  void dispatch(json& message);
  void dispatch(json&& message) { dispatch(message); }
  // Answers a message that is not valid JSON-RPC.
  void reject_invalid(const json& message, const std::string& why);

  // Thread-safe: marks an in-flight request cancelled. Returns false if it is not in flight.
  bool cancel(const json& id);
  // Thread-safe: a `$/cancelRequest` message (the reader thread handles it at once, so a request
  // the main loop is busy with sees its token flip). Sent as a request (with an id) it still
  // cancels, then is answered MethodNotFound: LSP 3.17 says a `$/` request must be answered
  // with that error, and JSON-RPC that every request is answered.
  void cancel_request(const json& message);
  size_t in_flight() const;
  bool has_request_handler(const std::string& method) const { return requests_.count(method) > 0; }

 private:
  Reply make_reply(const json& id);

  Reply::Send send_;
  std::map<std::string, RequestHandler> requests_;
  std::map<std::string, NotificationHandler> notifications_;
  Gate request_gate_;
  std::function<bool(const std::string&)> notification_gate_;
  mutable std::mutex in_flight_mutex_;
  std::unordered_map<std::string, CancellationToken> in_flight_;  // key: id.dump()
  // Cancellations that arrived before their request was dispatched (bounded).
  std::deque<std::string> cancelled_early_;
};

}  // namespace mk::rpc
