#include "agents/llm/provider_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agents/llm/provider_client.h"
#include "agents/llm/redact.h"
#include "agents/llm/replay_launcher.h"

namespace mk::llm {

namespace {

constexpr const char* kSpecForms =
    "none | replay:FILE | openai:MODEL[@BASE_URL] | gemini:MODEL | anthropic:MODEL";

// A client whose endpoint is a replay server it owns.
class ReplayClient : public Client {
 public:
  ReplayClient(std::unique_ptr<ReplayServer> server, std::unique_ptr<Client> inner,
               std::string fixture)
      : server_(std::move(server)), inner_(std::move(inner)), fixture_(std::move(fixture)) {}
  ~ReplayClient() override {
    inner_.reset();
    server_.reset();
  }
  ChatResponse complete(const ChatRequest& request, const StreamSink& sink,
                        const CancelFlag& cancelled) override {
    return inner_->complete(request, sink, cancelled);
  }
  std::string describe() const override {
    return "replay " + fixture_ + " (" + inner_->describe() + ")";
  }

 private:
  std::unique_ptr<ReplayServer> server_;
  std::unique_ptr<Client> inner_;
  std::string fixture_;
};

std::unique_ptr<Client> make_replay_client(const ProviderConfig& config) {
  std::ifstream in(config.replay_fixture);
  if (!in) throw LlmError(ErrorKind::Config, "cannot read replay fixture " + config.replay_fixture);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json fixture = nlohmann::json::parse(text.str(), nullptr, false);
  if (fixture.is_discarded() || !fixture.is_object() || !fixture.contains("provider") ||
      !fixture["provider"].is_string() || !fixture.contains("model") ||
      !fixture["model"].is_string())
    throw LlmError(ErrorKind::Config, "replay fixture " + config.replay_fixture +
                                          " must be a JSON object with string fields "
                                          "\"provider\" and \"model\" (docs/llm.md)");
  auto kind = parse_provider_kind(fixture["provider"].get<std::string>());
  if (!kind)
    throw LlmError(ErrorKind::Config, "replay fixture " + config.replay_fixture +
                                          ": unknown provider '" +
                                          fixture["provider"].get<std::string>() + "'");
  auto server = std::make_unique<ReplayServer>(config.replay_python, config.replay_fixture);
  ProviderConfig inner = config;
  inner.replay_fixture.clear();
  inner.kind = *kind;
  inner.model = fixture["model"].get<std::string>();
  std::string base = server->base_url();
  inner.base_url = *kind == ProviderKind::OpenAI   ? base + "/v1"
                   : *kind == ProviderKind::Gemini ? base + "/v1beta"
                                                   : base;
  if (!inner.api_key) inner.api_key = "replay-key";
  auto client = make_client(inner);
  return std::make_unique<ReplayClient>(std::move(server), std::move(client),
                                        config.replay_fixture);
}

}  // namespace

const char* to_string(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::OpenAI:
      return "openai";
    case ProviderKind::Gemini:
      return "gemini";
    case ProviderKind::Anthropic:
      return "anthropic";
  }
  return "?";
}

std::optional<ProviderKind> parse_provider_kind(std::string_view name) {
  if (name == "openai") return ProviderKind::OpenAI;
  if (name == "gemini") return ProviderKind::Gemini;
  if (name == "anthropic") return ProviderKind::Anthropic;
  return std::nullopt;
}

std::string default_base_url(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::OpenAI:
      return "https://api.openai.com/v1";
    case ProviderKind::Gemini:
      return "https://generativelanguage.googleapis.com/v1beta";
    case ProviderKind::Anthropic:
      return "https://api.anthropic.com";
  }
  return "";
}

std::string default_api_key_env(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::OpenAI:
      return "OPENAI_API_KEY";
    case ProviderKind::Gemini:
      return "GEMINI_API_KEY";
    case ProviderKind::Anthropic:
      return "ANTHROPIC_API_KEY";
  }
  return "";
}

std::optional<ProviderConfig> parse_llm_spec(std::string_view spec) {
  if (spec == "none") return std::nullopt;
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon + 1 == spec.size())
    throw LlmError(ErrorKind::Config,
                   "--llm '" + std::string(spec) + "' is not one of: " + kSpecForms);
  std::string_view head = spec.substr(0, colon);
  std::string_view rest = spec.substr(colon + 1);
  ProviderConfig config;
  if (head == "replay") {
    config.replay_fixture = std::string(rest);
    return config;
  }
  auto kind = parse_provider_kind(head);
  if (!kind)
    throw LlmError(ErrorKind::Config,
                   "--llm: unknown provider '" + std::string(head) + "'; expected " + kSpecForms);
  config.kind = *kind;
  size_t at = rest.find('@');
  if (at != std::string_view::npos) {
    if (*kind != ProviderKind::OpenAI)
      throw LlmError(ErrorKind::Config,
                     "--llm: only openai takes @BASE_URL (an OpenAI-compatible server)");
    config.base_url = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (config.base_url.rfind("http://", 0) != 0 && config.base_url.rfind("https://", 0) != 0)
      throw LlmError(ErrorKind::Config, "--llm: the base URL must start with http:// or https://");
  }
  if (rest.empty()) throw LlmError(ErrorKind::Config, "--llm: the model name is missing");
  config.model = std::string(rest);
  return config;
}

std::unique_ptr<Client> make_client(const ProviderConfig& input) {
  if (!input.replay_fixture.empty()) return make_replay_client(input);
  ProviderConfig config = input;
  if (config.model.empty()) throw LlmError(ErrorKind::Config, "no model configured for the LLM");
  if (config.base_url.empty()) config.base_url = default_base_url(config.kind);
  while (!config.base_url.empty() && config.base_url.back() == '/') config.base_url.pop_back();
  if (config.base_url.rfind("http://", 0) != 0 && config.base_url.rfind("https://", 0) != 0)
    throw LlmError(ErrorKind::Config, "the LLM base URL must start with http:// or https://: " +
                                          redact(config.base_url, {}));
  if (config.api_key_env.empty()) config.api_key_env = default_api_key_env(config.kind);
  std::string key;
  if (config.api_key) {
    key = *config.api_key;
  } else if (const char* value = std::getenv(config.api_key_env.c_str())) {
    key = value;
  }
  if (key.empty())
    throw LlmError(ErrorKind::Config, std::string("no API key for ") + to_string(config.kind) +
                                          ": set the environment variable " + config.api_key_env +
                                          " (or store a key in the editor)");
  return std::make_unique<ProviderClient>(std::move(config), std::move(key));
}

std::unique_ptr<Client> make_client_for_spec(std::string_view spec,
                                             const ProviderConfig& settings) {
  auto parsed = parse_llm_spec(spec);
  if (!parsed) return nullptr;
  ProviderConfig config = settings;
  config.kind = parsed->kind;
  config.model = parsed->model;
  config.base_url = parsed->base_url;
  config.replay_fixture = parsed->replay_fixture;
  return make_client(config);
}

}  // namespace mk::llm
