// Shared by the LLM tests: fixtures composed from the hand-written ones, a replay server with a
// client pointed at it, the server's request log, and a spdlog sink that captures every line.
#pragma once

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/llm/llm_client.h"
#include "agents/llm/provider_config.h"
#include "agents/llm/replay_launcher.h"

namespace mk::llm::test {

inline constexpr const char* kPlantedKey = "sk-PLANTED-123";
inline constexpr const char* kAnswer =
    "Use a block of (256, 512) so that both tiles fit in VMEM; mark the grid's first axis "
    "\"parallel\".";

// tests/llm/fixtures/<provider>.json
nlohmann::json load_fixture(const std::string& provider);

// One step of a composed fixture: a named entry of the provider's fixture, with a fault added.
struct Step {
  std::string name;
  nlohmann::json fault = nullptr;
};

// Writes a fixture holding the given entries of the provider's fixture, in order; returns its path.
std::string compose_fixture(const std::string& provider, const std::vector<Step>& steps);

std::string temp_path(const std::string& name);

// GET or POST on the replay server's control endpoints.
std::string http_get(const std::string& url);
void http_post_json(const std::string& url, const nlohmann::json& body);

// A client of that provider pointed at a replay server serving a composed fixture. One server per
// provider is shared by every test of the process (POST /_load swaps its fixture): starting
// Python per test would dominate the run time.
class Replay {
 public:
  Replay(const std::string& provider, const std::vector<Step>& steps,
         const ProviderConfig& settings = defaults());
  static ProviderConfig defaults();  // fast retries, short timeouts, the planted key

  Client& client() { return *client_; }
  nlohmann::json log() const;  // every request the server saw
  void fault(const nlohmann::json& fault) const;
  const ProviderConfig& config() const { return config_; }
  std::string base_url() const { return server_->base_url(); }

 private:
  ReplayServer* server_;
  ProviderConfig config_;
  std::unique_ptr<Client> client_;
};

ChatRequest simple_request(bool stream, const std::string& purpose = "planner");

// Captures every formatted log line (install with CapturedLogs::install()).
class CaptureSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    lines_.emplace_back(formatted.data(), formatted.size());
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
};

// Routes the default logger to a CaptureSink (trace level) for the test's lifetime.
class CapturedLogs {
 public:
  CapturedLogs();
  ~CapturedLogs();
  std::vector<std::string> lines() { return sink_->lines(); }

 private:
  std::shared_ptr<CaptureSink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace mk::llm::test
