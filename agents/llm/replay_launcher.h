// Starts agents/replay/replay_server.py (embedded in this library at build time) on loopback,
// reads the port it prints, and stops it. Used by `--llm replay:FILE` and by the tests.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace mk::llm {

class ReplayServer {
 public:
  // Throws LlmError(Config) when the server cannot be started or prints no port in `timeout`.
  ReplayServer(const std::string& python, const std::string& fixture_path,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(15'000));
  ~ReplayServer();  // stops the server
  ReplayServer(const ReplayServer&) = delete;
  ReplayServer& operator=(const ReplayServer&) = delete;

  int port() const { return port_; }
  std::string base_url() const;  // http://127.0.0.1:PORT
  void stop();

  // Where the embedded script was written (once per process), e.g. to run it by hand.
  static std::string script_path();

 private:
  struct Process;
  std::unique_ptr<Process> process_;
  int port_ = 0;
};

}  // namespace mk::llm
