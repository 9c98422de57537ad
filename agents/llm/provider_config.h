// Which provider, model, endpoint and key a client uses; the `--llm` spec; the client factory.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agents/llm/budget.h"
#include "agents/llm/llm_client.h"
#include "agents/llm/pricing.h"
#include "agents/llm/retry.h"

namespace mk::llm {

enum class ProviderKind { OpenAI, Gemini, Anthropic };
const char* to_string(ProviderKind kind);  // "openai", "gemini", "anthropic"
std::optional<ProviderKind> parse_provider_kind(std::string_view name);
std::string default_base_url(ProviderKind kind);
std::string default_api_key_env(ProviderKind kind);  // OPENAI_API_KEY, GEMINI_API_KEY, ...

struct ProviderConfig {
  ProviderKind kind = ProviderKind::OpenAI;
  std::string base_url;  // empty: the provider's public endpoint
  std::string model;
  std::string api_key_env;  // empty: default_api_key_env(kind)
  // A key from the caller (the editor's secret store); wins over the environment variable.
  std::optional<std::string> api_key;

  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{300'000};
  RetryPolicy retry;
  std::shared_ptr<Budget> budget;            // shared by every call of a run; null: unlimited
  std::shared_ptr<const PriceTable> prices;  // null: PriceTable::defaults()

  std::string record_path;     // non-empty: every exchange is written to this fixture file
  std::string replay_fixture;  // non-empty (replay:FILE): serve this fixture on loopback
  std::string replay_python = "python3";  // runs agents/replay/replay_server.py
  // OpenAI-compatible servers differ: api.openai.com wants max_completion_tokens, most others
  // (vLLM, Ollama, llama.cpp) max_tokens. Empty: chosen from base_url.
  std::string openai_max_tokens_field;
};

// Parses the CLI's `--llm` value: none | replay:FILE | openai:MODEL[@BASE_URL] | gemini:MODEL |
// anthropic:MODEL. nullopt for `none`; throws LlmError(Config) naming the accepted forms.
// For replay:FILE only replay_fixture is set: provider and model come from the fixture.
std::optional<ProviderConfig> parse_llm_spec(std::string_view spec);

// Builds the client. The key is resolved now (Config error naming the variable when missing).
// A config with replay_fixture starts the replay server; the client owns and stops it.
std::unique_ptr<Client> make_client(const ProviderConfig& config);

// parse_llm_spec + make_client; `settings` supplies everything but kind, model, base URL and
// fixture (timeouts, retry, budget, prices, key, recording). nullptr for `none`.
std::unique_ptr<Client> make_client_for_spec(std::string_view spec,
                                             const ProviderConfig& settings = {});

}  // namespace mk::llm
