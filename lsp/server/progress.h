// Work-done progress for background jobs: uses the client's token when the request carried one,
// else creates a server token with window/workDoneProgress/create and buffers reports until the
// client has acknowledged it. Main-loop only.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lsp/protocol/outgoing_requests.h"

namespace mk::server {

class ProgressTracker {
 public:
  using Notify = std::function<void(const std::string& method, nlohmann::json params)>;
  ProgressTracker(Notify notify, rpc::OutgoingRequests& outgoing)
      : notify_(std::move(notify)), outgoing_(outgoing) {}

  void set_client_support(bool supported) { supported_ = supported; }
  // Begins a cancellable progress; returns its token (as a string key).
  std::string begin(const std::string& title, const nlohmann::json* client_token);
  void report(const std::string& token, const std::string& message,
              std::optional<int> percent = std::nullopt);
  void end(const std::string& token, const std::string& message);
  bool active(const std::string& token) const { return progresses_.count(token) > 0; }

 private:
  struct State {
    nlohmann::json token;
    bool ready = false;   // create acknowledged (or the client's own token)
    bool failed = false;  // the client refused create: stay silent
    std::vector<nlohmann::json> buffered;
    bool ended = false;
  };
  void send(State& s, nlohmann::json value);

  Notify notify_;
  rpc::OutgoingRequests& outgoing_;
  bool supported_ = false;
  int next_ = 1;
  std::map<std::string, State> progresses_;
};

}  // namespace mk::server
