#include "lsp/protocol/dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace mk::rpc {

Reply::Reply(json id, Send send, std::function<void()> on_done, CancellationToken token)
    : state_(std::make_shared<State>()) {
  state_->id = std::move(id);
  state_->send = std::move(send);
  state_->on_done = std::move(on_done);
  state_->token = std::move(token);
}

bool Reply::claim() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->answered) {
    spdlog::error("request {} answered twice; second answer dropped", state_->id.dump());
    return false;
  }
  state_->answered = true;
  return true;
}

void Reply::result(json value) const {
  if (!claim()) return;
  state_->send(make_response(state_->id, std::move(value)));
  if (state_->on_done) state_->on_done();
}

void Reply::error(int code, const std::string& message) const {
  if (!claim()) return;
  state_->send(make_error_response(state_->id, {code, message}));
  if (state_->on_done) state_->on_done();
}

Reply::State::~State() {
  if (answered) return;
  spdlog::error("request {} was dropped without an answer", id.dump());
  send(make_error_response(
      id, {error_code::kInternalError, "the server dropped this request without an answer"}));
  if (on_done) on_done();
}

Reply Dispatcher::make_reply(const json& id) {
  CancellationToken token;
  const std::string key = id.dump();
  {
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    in_flight_[key] = token;
    auto early = std::find(cancelled_early_.begin(), cancelled_early_.end(), key);
    if (early != cancelled_early_.end()) {
      cancelled_early_.erase(early);
      token.cancel();
    }
  }
  return Reply(
      id, send_,
      [this, key] {
        std::lock_guard<std::mutex> lock(in_flight_mutex_);
        in_flight_.erase(key);
      },
      token);
}

bool Dispatcher::cancel(const json& id) {
  std::lock_guard<std::mutex> lock(in_flight_mutex_);
  auto it = in_flight_.find(id.dump());
  if (it == in_flight_.end()) {
    // Not started yet (still queued) or already answered: remember it for a while.
    cancelled_early_.push_back(id.dump());
    if (cancelled_early_.size() > 256) cancelled_early_.pop_front();
    return false;
  }
  it->second.cancel();
  return true;
}

void Dispatcher::cancel_request(const json& message) {
  const auto params = message.find("params");
  const bool has_target = params != message.end() && params->is_object() && params->contains("id");
  if (has_target) cancel((*params)["id"]);
  const auto id = message.find("id");
  if (id == message.end()) return;  // the notification every real client sends
  std::string why =
      "$/cancelRequest is a notification; sent as a request it is answered "
      "MethodNotFound";
  why += has_target ? " (the cancellation was applied)" : " (no params.id: nothing was cancelled)";
  send_(make_error_response(*id, {error_code::kMethodNotFound, why}));
}

size_t Dispatcher::in_flight() const {
  std::lock_guard<std::mutex> lock(in_flight_mutex_);
  return in_flight_.size();
}

void Dispatcher::reject_invalid(const json& message, const std::string& why) {
  json id = nullptr;
  if (message.is_object() && message.contains("id") &&
      (message["id"].is_string() || message["id"].is_number_integer())) {
    id = message["id"];
  }
  send_(make_error_response(id, {error_code::kInvalidRequest, why}));
}

void Dispatcher::dispatch(json& message) {
  const std::string method = message["method"].get<std::string>();
  static const json kEmpty = json::object();
  // Over the message's own params, so a handler may move strings out of them.
  auto params = [&] {
    return message.contains("params") ? ParamReader(message["params"]) : ParamReader(kEmpty);
  };

  if (!message.contains("id")) {
    if (notification_gate_ && !notification_gate_(method)) return;
    auto it = notifications_.find(method);
    if (it == notifications_.end()) {
      if (!method.starts_with("$/")) spdlog::debug("ignoring notification {}", method);
      return;
    }
    try {
      it->second(params());
    } catch (const RpcError& e) {
      spdlog::warn("notification {} rejected: {}", method, e.what());
    } catch (const std::exception& e) {
      spdlog::error("notification {} failed: {}", method, e.what());
    }
    return;
  }

  Reply reply = make_reply(message["id"]);
  if (request_gate_) {
    if (auto refusal = request_gate_(method)) {
      reply.error(refusal->code, refusal->message);
      return;
    }
  }
  if (reply.token().cancelled()) {
    reply.error(error_code::kRequestCancelled, "request cancelled before it started");
    return;
  }
  auto it = requests_.find(method);
  if (it == requests_.end()) {
    reply.error(error_code::kMethodNotFound, "method not found: " + method);
    return;
  }
  try {
    it->second(params(), reply);
  } catch (const RpcError& e) {
    if (!reply.answered()) reply.error(e.code(), e.what());
  } catch (const std::exception& e) {
    spdlog::error("request {} failed: {}", method, e.what());
    if (!reply.answered())
      reply.error(error_code::kInternalError, std::string("internal error: ") + e.what());
  }
}

}  // namespace mk::rpc
