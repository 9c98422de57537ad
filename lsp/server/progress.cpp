#include "lsp/server/progress.h"

namespace mk::server {

using nlohmann::json;

std::string ProgressTracker::begin(const std::string& title, const json* client_token) {
  State s;
  std::string key;
  if (client_token && (client_token->is_string() || client_token->is_number_integer())) {
    s.token = *client_token;
    s.ready = true;
    key = client_token->dump();
  } else {
    s.token = "maxkernel-" + std::to_string(next_++);
    key = s.token.dump();
    if (!supported_) s.failed = true;
  }
  progresses_[key] = s;
  State& state = progresses_[key];
  if (!state.ready && !state.failed) {
    outgoing_.send("window/workDoneProgress/create", {{"token", state.token}},
                   [this, key](const json*, const rpc::Error* error) {
                     auto it = progresses_.find(key);
                     if (it == progresses_.end()) return;
                     State& st = it->second;
                     if (error) {
                       st.failed = true;
                     } else {
                       st.ready = true;
                       for (json& v : st.buffered)
                         notify_("$/progress", {{"token", st.token}, {"value", std::move(v)}});
                     }
                     st.buffered.clear();
                     if (st.ended) progresses_.erase(it);
                   });
  }
  send(state, {{"kind", "begin"}, {"title", title}, {"cancellable", true}});
  return key;
}

void ProgressTracker::send(State& s, json value) {
  if (s.failed) return;
  if (!s.ready) {
    s.buffered.push_back(std::move(value));
    return;
  }
  notify_("$/progress", {{"token", s.token}, {"value", std::move(value)}});
}

void ProgressTracker::report(const std::string& token, const std::string& message,
                             std::optional<int> percent) {
  auto it = progresses_.find(token);
  if (it == progresses_.end()) return;
  json value = {{"kind", "report"}, {"message", message}};
  if (percent) value["percentage"] = *percent;
  send(it->second, std::move(value));
}

void ProgressTracker::end(const std::string& token, const std::string& message) {
  auto it = progresses_.find(token);
  if (it == progresses_.end()) return;
  send(it->second, {{"kind", "end"}, {"message", message}});
  it->second.ended = true;
  if (it->second.ready || it->second.failed) progresses_.erase(it);
}

}  // namespace mk::server
