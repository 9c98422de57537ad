// The Client every provider is: one WireFormat for what differs, and here what does not (HTTP,
// streaming, retries with backoff, error kinds, usage and cost, budget, recording, redaction).
#pragma once

#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "agents/llm/fixture_recorder.h"
#include "agents/llm/llm_client.h"
#include "agents/llm/provider_config.h"

namespace mk::llm {

class WireFormat;

class ProviderClient : public Client {
 public:
  // `config.base_url` is already resolved (no trailing slash); `api_key` is the resolved key.
  ProviderClient(ProviderConfig config, std::string api_key);
  ~ProviderClient() override;

  ChatResponse complete(const ChatRequest& request, const StreamSink& sink = {},
                        const CancelFlag& cancelled = {}) override;
  std::string describe() const override;

 private:
  struct Attempt;
  Attempt attempt_once(const ChatRequest& request, const StreamSink& sink,
                       const CancelFlag& cancelled, int attempt);
  LlmError error_for_status(int status, const std::string& body) const;
  std::string clean(const std::string& text) const;  // redacted for logs and errors

  ProviderConfig config_;
  std::string api_key_;
  std::unique_ptr<WireFormat> wire_;
  std::shared_ptr<const PriceTable> prices_;
  std::unique_ptr<FixtureRecorder> recorder_;
  std::mutex rng_mutex_;
  std::mt19937_64 rng_;
};

}  // namespace mk::llm
