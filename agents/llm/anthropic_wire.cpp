// Anthropic Messages: POST {base}/v1/messages with x-api-key and anthropic-version; the stream is
// typed SSE events (message_start, content_block_delta, message_delta, message_stop, error).
#include <nlohmann/json.hpp>

#include "agents/llm/wire_format.h"

namespace mk::llm {

namespace {

using nlohmann::json;

constexpr const char* kApiVersion = "2023-06-01";

std::string normalise_stop(const std::string& reason, Answer& answer) {
  if (reason == "end_turn" || reason == "stop_sequence") return "stop";
  if (reason == "max_tokens") return "length";
  if (reason == "tool_use") return "tool_calls";
  if (reason == "refusal") {
    answer.refusal = "stop_reason refusal";
    return "content_filter";
  }
  return reason;
}

// Anthropic counts cache reads and writes apart from input_tokens; Usage counts every prompt
// token in input_tokens, the cache reads again in cached_input_tokens.
void read_anthropic_usage(const json& usage, Answer& answer) {
  if (!usage.is_object()) return;
  auto number = [&](const char* field) {
    return usage.contains(field) && usage[field].is_number_integer() ? usage[field].get<int64_t>()
                                                                     : -1;
  };
  int64_t input = number("input_tokens");
  int64_t cache_read = number("cache_read_input_tokens");
  int64_t cache_write = number("cache_creation_input_tokens");
  if (input >= 0)
    answer.usage.input_tokens =
        input + std::max<int64_t>(cache_read, 0) + std::max<int64_t>(cache_write, 0);
  if (cache_read >= 0) answer.usage.cached_input_tokens = cache_read;
  if (int64_t output = number("output_tokens"); output >= 0) answer.usage.output_tokens = output;
}

void throw_anthropic_error(const json& error) {
  std::string type = error.is_object() ? error.value("type", std::string()) : "";
  std::string message = error.is_object() ? error.value("message", std::string()) : error.dump();
  throw LlmError(kind_of_stream_error(type), "anthropic: " + message);
}

class AnthropicWire : public WireFormat {
 public:
  using WireFormat::WireFormat;

  WireRequest build(const ChatRequest& request) const override {
    WireRequest wire;
    wire.url = config_.base_url + "/v1/messages";
    wire.headers = {{"Content-Type", "application/json"},
                    {"x-api-key", api_key_},
                    {"anthropic-version", kApiVersion}};
    json messages = json::array();
    std::string system;
    for (const Message& message : request.messages) {
      if (message.role == Role::System) {
        system += system.empty() ? message.text : "\n\n" + message.text;
        continue;
      }
      messages.push_back({{"role", message.role == Role::Assistant ? "assistant" : "user"},
                          {"content", message.text}});
    }
    wire.body = {{"model", config_.model},
                 {"max_tokens", request.max_output_tokens},
                 {"temperature", request.temperature},
                 {"messages", std::move(messages)}};
    if (!system.empty()) wire.body["system"] = system;
    if (request.stream) wire.body["stream"] = true;
    return wire;
  }

  void read_body(const json& body, Answer& answer) const override {
    if (!body.is_object()) malformed("anthropic: the response is not a JSON object");
    if (body.value("type", std::string()) == "error") throw_anthropic_error(body["error"]);
    if (!body.contains("content") || !body["content"].is_array())
      malformed("anthropic: the response has no content array");
    for (const json& block : body["content"])
      if (block.value("type", std::string()) == "text" && block.contains("text"))
        answer.text += block["text"].get<std::string>();
    if (body.contains("stop_reason") && body["stop_reason"].is_string())
      answer.finish_reason = normalise_stop(body["stop_reason"].get<std::string>(), answer);
    if (body.contains("usage")) read_anthropic_usage(body["usage"], answer);
    answer.model = body.value("model", config_.model);
    answer.complete = true;
  }

  void read_event(const SseEvent& event, Answer& answer, const StreamSink& sink) const override {
    json data = json::parse(event.data, nullptr, false);
    if (data.is_discarded() || !data.is_object())
      malformed("anthropic: a stream event is not a JSON object: " + event.data.substr(0, 120));
    std::string type = event.event.empty() ? data.value("type", std::string()) : event.event;
    if (type == "message_start") {
      if (!data.contains("message") || !data["message"].is_object())
        malformed("anthropic: message_start without a message");
      const json& message = data["message"];
      answer.model = message.value("model", config_.model);
      if (message.contains("usage")) read_anthropic_usage(message["usage"], answer);
    } else if (type == "content_block_delta") {
      if (!data.contains("delta") || !data["delta"].is_object())
        malformed("anthropic: content_block_delta without a delta");
      const json& delta = data["delta"];
      if (delta.value("type", std::string()) == "text_delta" && delta.contains("text") &&
          delta["text"].is_string())
        emit(delta["text"].get<std::string>(), answer, sink);
    } else if (type == "message_delta") {
      if (data.contains("delta") && data["delta"].contains("stop_reason") &&
          data["delta"]["stop_reason"].is_string())
        answer.finish_reason =
            normalise_stop(data["delta"]["stop_reason"].get<std::string>(), answer);
      if (data.contains("usage")) read_anthropic_usage(data["usage"], answer);
    } else if (type == "message_stop") {
      answer.complete = true;
    } else if (type == "error") {
      throw_anthropic_error(data.contains("error") ? data["error"] : data);
    }
    // ping, content_block_start, content_block_stop and unknown future events carry no text.
  }

  bool context_too_long(int status, const json& body) const override {
    if (status == 413) return true;
    if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return false;
    std::string message = body["error"].value("message", std::string());
    return message.find("prompt is too long") != std::string::npos;
  }
};

}  // namespace

std::unique_ptr<WireFormat> make_anthropic_wire(const ProviderConfig& config, std::string api_key) {
  return std::make_unique<AnthropicWire>(config, std::move(api_key));
}

}  // namespace mk::llm
