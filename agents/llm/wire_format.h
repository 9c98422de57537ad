// Internal to agents/llm: what differs between providers (request shape, answer parsing, error
// bodies). ProviderClient does the rest (HTTP, retries, usage, budget, recording) for all three.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/llm/llm_client.h"
#include "agents/llm/provider_config.h"
#include "agents/llm/sse_parser.h"

namespace mk::llm {

struct WireRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // including the key's header
  nlohmann::json body;
};

// What a response (whole or streamed so far) said.
struct Answer {
  std::string text;
  std::string finish_reason;  // normalised: stop, length, content_filter, tool_calls, ...
  std::string refusal;        // the provider's words when it refused
  Usage usage;                // input_tokens include cached ones
  std::string model;
  bool complete = false;  // the terminal event / field arrived
  int deltas = 0;         // text pieces handed to the sink
};

class WireFormat {
 public:
  WireFormat(const ProviderConfig& config, std::string api_key)
      : config_(config), api_key_(std::move(api_key)) {}
  virtual ~WireFormat() = default;

  virtual WireRequest build(const ChatRequest& request) const = 0;
  // A whole JSON body. Throws LlmError(Malformed) when it is not the provider's shape.
  virtual void read_body(const nlohmann::json& body, Answer& answer) const = 0;
  // One SSE event. Throws LlmError (Malformed, or the kind of an in-stream error event).
  virtual void read_event(const SseEvent& event, Answer& answer, const StreamSink& sink) const = 0;
  // Whether an error body says the prompt does not fit the model.
  virtual bool context_too_long(int status, const nlohmann::json& body) const = 0;

  const ProviderConfig& config() const { return config_; }

 protected:
  static void emit(const std::string& delta, Answer& answer, const StreamSink& sink) {
    if (delta.empty()) return;
    answer.text += delta;
    ++answer.deltas;
    if (sink) sink(delta);
  }
  [[noreturn]] static void malformed(const std::string& what) {
    throw LlmError(ErrorKind::Malformed, what);
  }

  ProviderConfig config_;
  std::string api_key_;
};

std::unique_ptr<WireFormat> make_openai_wire(const ProviderConfig& config, std::string api_key);
std::unique_ptr<WireFormat> make_gemini_wire(const ProviderConfig& config, std::string api_key);
std::unique_ptr<WireFormat> make_anthropic_wire(const ProviderConfig& config, std::string api_key);

// The error kind of an error type string found inside a stream or error body.
ErrorKind kind_of_stream_error(const std::string& type);

}  // namespace mk::llm
