// Native Gemini: POST {base}/models/{model}:generateContent, or :streamGenerateContent?alt=sse
// whose SSE events each carry a whole GenerateContentResponse; key in x-goog-api-key.
#include <nlohmann/json.hpp>

#include "agents/llm/wire_format.h"

namespace mk::llm {

namespace {

using nlohmann::json;

std::string normalise_finish(const std::string& reason, Answer& answer) {
  if (reason == "STOP") return "stop";
  if (reason == "MAX_TOKENS") return "length";
  if (reason == "SAFETY" || reason == "RECITATION" || reason == "BLOCKLIST" ||
      reason == "PROHIBITED_CONTENT" || reason == "SPII" || reason == "IMAGE_SAFETY" ||
      reason == "LANGUAGE") {
    answer.refusal = "finishReason " + reason;
    return "content_filter";
  }
  std::string lowered;
  for (char c : reason) lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lowered;
}

void throw_gemini_error(const json& error) {
  std::string status = error.is_object() ? error.value("status", std::string()) : "";
  std::string message = error.is_object() ? error.value("message", std::string()) : error.dump();
  throw LlmError(kind_of_stream_error(status), "gemini: " + message);
}

class GeminiWire : public WireFormat {
 public:
  using WireFormat::WireFormat;

  WireRequest build(const ChatRequest& request) const override {
    WireRequest wire;
    wire.url = config_.base_url + "/models/" + config_.model +
               (request.stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
    wire.headers = {{"Content-Type", "application/json"}, {"x-goog-api-key", api_key_}};
    json contents = json::array();
    std::string system;
    for (const Message& message : request.messages) {
      if (message.role == Role::System) {
        system += system.empty() ? message.text : "\n\n" + message.text;
        continue;
      }
      contents.push_back({{"role", message.role == Role::Assistant ? "model" : "user"},
                          {"parts", json::array({{{"text", message.text}}})}});
    }
    wire.body = {
        {"contents", std::move(contents)},
        {"generationConfig",
         {{"maxOutputTokens", request.max_output_tokens}, {"temperature", request.temperature}}}};
    if (!system.empty())
      wire.body["systemInstruction"] = {{"parts", json::array({{{"text", system}}})}};
    return wire;
  }

  void read_body(const json& body, Answer& answer) const override {
    if (!body.is_object()) malformed("gemini: the response is not a JSON object");
    if (body.contains("error")) throw_gemini_error(body["error"]);
    if (!body.contains("candidates") && !body.contains("promptFeedback"))
      malformed("gemini: the response has neither candidates nor promptFeedback");
    read_response(body, answer, {});
    answer.complete = true;
  }

  void read_event(const SseEvent& event, Answer& answer, const StreamSink& sink) const override {
    json chunk = json::parse(event.data, nullptr, false);
    if (chunk.is_discarded() || !chunk.is_object())
      malformed("gemini: a stream event is not a JSON object: " + event.data.substr(0, 120));
    if (chunk.contains("error")) throw_gemini_error(chunk["error"]);
    read_response(chunk, answer, sink);
  }

  bool context_too_long(int status, const json& body) const override {
    if (status != 400 || !body.is_object() || !body.contains("error")) return false;
    std::string message = body["error"].value("message", std::string());
    return message.find("exceeds the maximum number of tokens") != std::string::npos ||
           message.find("input token count") != std::string::npos;
  }

 private:
  void read_response(const json& response, Answer& answer, const StreamSink& sink) const {
    if (response.contains("promptFeedback") && response["promptFeedback"].is_object() &&
        response["promptFeedback"].contains("blockReason")) {
      answer.refusal = "prompt blocked: " + response["promptFeedback"]["blockReason"].dump();
      answer.finish_reason = "content_filter";
      answer.complete = true;
    }
    if (response.contains("candidates") && response["candidates"].is_array() &&
        !response["candidates"].empty()) {
      const json& candidate = response["candidates"][0];
      if (candidate.contains("content") && candidate["content"].contains("parts") &&
          candidate["content"]["parts"].is_array()) {
        for (const json& part : candidate["content"]["parts"]) {
          if (part.value("thought", false)) continue;  // a thinking summary, not the answer
          if (part.contains("text") && part["text"].is_string())
            emit(part["text"].get<std::string>(), answer, sink);
        }
      }
      if (candidate.contains("finishReason") && candidate["finishReason"].is_string()) {
        answer.finish_reason =
            normalise_finish(candidate["finishReason"].get<std::string>(), answer);
        answer.complete = true;
      }
    }
    if (response.contains("usageMetadata") && response["usageMetadata"].is_object()) {
      const json& usage = response["usageMetadata"];
      answer.usage.input_tokens = usage.value("promptTokenCount", int64_t{0});
      // Thinking tokens are billed as output.
      answer.usage.output_tokens = usage.value("candidatesTokenCount", int64_t{0}) +
                                   usage.value("thoughtsTokenCount", int64_t{0});
      answer.usage.cached_input_tokens = usage.value("cachedContentTokenCount", int64_t{0});
    }
    if (response.contains("modelVersion") && response["modelVersion"].is_string())
      answer.model = response["modelVersion"].get<std::string>();
  }
};

}  // namespace

std::unique_ptr<WireFormat> make_gemini_wire(const ProviderConfig& config, std::string api_key) {
  return std::make_unique<GeminiWire>(config, std::move(api_key));
}

}  // namespace mk::llm
