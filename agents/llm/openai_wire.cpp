// OpenAI-compatible chat completions: POST {base}/chat/completions, Bearer key, SSE chunks with
// `choices[].delta`, a final usage chunk (stream_options.include_usage) and `data: [DONE]`.
#include <nlohmann/json.hpp>

#include "agents/llm/wire_format.h"

namespace mk::llm {

namespace {

using nlohmann::json;

const char* role_name(Role role) {
  switch (role) {
    case Role::System:
      return "system";
    case Role::User:
      return "user";
    case Role::Assistant:
      return "assistant";
  }
  return "user";
}

void read_openai_usage(const json& usage, Answer& answer) {
  if (!usage.is_object()) return;
  answer.usage.input_tokens = usage.value("prompt_tokens", int64_t{0});
  answer.usage.output_tokens = usage.value("completion_tokens", int64_t{0});
  const json& details =
      usage.contains("prompt_tokens_details") ? usage["prompt_tokens_details"] : json();
  answer.usage.cached_input_tokens =
      details.is_object() ? details.value("cached_tokens", int64_t{0}) : 0;
}

void read_finish(const json& choice, Answer& answer) {
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    answer.finish_reason = choice["finish_reason"].get<std::string>();
    answer.complete = true;
  }
}

void throw_openai_error(const json& error) {
  std::string type = error.is_object() ? error.value("type", std::string()) : "";
  std::string code = error.is_object() && error.contains("code") && error["code"].is_string()
                         ? error["code"].get<std::string>()
                         : "";
  std::string message = error.is_object() ? error.value("message", std::string()) : error.dump();
  throw LlmError(kind_of_stream_error(code.empty() ? type : code), "openai: " + message);
}

class OpenAiWire : public WireFormat {
 public:
  using WireFormat::WireFormat;

  WireRequest build(const ChatRequest& request) const override {
    WireRequest wire;
    std::string base = config_.base_url;
    wire.url = base + "/chat/completions";
    wire.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + api_key_}};
    if (request.stream) wire.headers.emplace_back("Accept", "text/event-stream");
    json messages = json::array();
    for (const Message& message : request.messages)
      messages.push_back({{"role", role_name(message.role)}, {"content", message.text}});
    std::string max_field = config_.openai_max_tokens_field;
    if (max_field.empty())
      max_field =
          base.find("api.openai.com") != std::string::npos ? "max_completion_tokens" : "max_tokens";
    wire.body = {{"model", config_.model},
                 {"messages", std::move(messages)},
                 {"temperature", request.temperature},
                 {max_field, request.max_output_tokens}};
    if (request.stream) {
      wire.body["stream"] = true;
      wire.body["stream_options"] = {{"include_usage", true}};
    }
    return wire;
  }

  void read_body(const json& body, Answer& answer) const override {
    if (body.contains("error")) throw_openai_error(body["error"]);
    if (!body.contains("choices") || !body["choices"].is_array() || body["choices"].empty())
      malformed("openai: the response has no choices");
    const json& choice = body["choices"][0];
    if (!choice.contains("message") || !choice["message"].is_object())
      malformed("openai: the first choice has no message");
    const json& message = choice["message"];
    if (message.contains("content") && message["content"].is_string())
      answer.text = message["content"].get<std::string>();
    if (message.contains("refusal") && message["refusal"].is_string())
      answer.refusal = message["refusal"].get<std::string>();
    read_finish(choice, answer);
    if (!answer.refusal.empty()) answer.finish_reason = "content_filter";
    if (body.contains("usage")) read_openai_usage(body["usage"], answer);
    answer.model = body.value("model", config_.model);
    answer.complete = true;
  }

  void read_event(const SseEvent& event, Answer& answer, const StreamSink& sink) const override {
    if (event.data == "[DONE]") {
      answer.complete = true;
      return;
    }
    json chunk = json::parse(event.data, nullptr, false);
    if (chunk.is_discarded() || !chunk.is_object())
      malformed("openai: a stream event is not a JSON object: " + event.data.substr(0, 120));
    if (chunk.contains("error")) throw_openai_error(chunk["error"]);
    if (chunk.contains("model") && chunk["model"].is_string())
      answer.model = chunk["model"].get<std::string>();
    if (chunk.contains("usage") && chunk["usage"].is_object())
      read_openai_usage(chunk["usage"], answer);
    if (!chunk.contains("choices") || !chunk["choices"].is_array())
      malformed("openai: a stream chunk has no choices array");
    for (const json& choice : chunk["choices"]) {
      if (choice.value("index", 0) != 0) continue;
      if (choice.contains("delta") && choice["delta"].is_object()) {
        const json& delta = choice["delta"];
        if (delta.contains("content") && delta["content"].is_string())
          emit(delta["content"].get<std::string>(), answer, sink);
        if (delta.contains("refusal") && delta["refusal"].is_string())
          answer.refusal += delta["refusal"].get<std::string>();
      }
      read_finish(choice, answer);
    }
    if (!answer.refusal.empty() && answer.complete) answer.finish_reason = "content_filter";
  }

  bool context_too_long(int, const json& body) const override {
    if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return false;
    const json& error = body["error"];
    if (error.contains("code") && error["code"] == "context_length_exceeded") return true;
    std::string message = error.value("message", std::string());
    return message.find("maximum context length") != std::string::npos ||
           message.find("context_length_exceeded") != std::string::npos;
  }
};

}  // namespace

std::unique_ptr<WireFormat> make_openai_wire(const ProviderConfig& config, std::string api_key) {
  return std::make_unique<OpenAiWire>(config, std::move(api_key));
}

}  // namespace mk::llm
