// An in-memory llm::Client that answers with recorded texts, in order, and keeps every request.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "agents/llm/llm_client.h"

namespace mk::agents::testing {

class ScriptedClient : public llm::Client {
 public:
  explicit ScriptedClient(std::vector<std::string> answers)
      : answers_(answers.begin(), answers.end()) {}

  llm::ChatResponse complete(const llm::ChatRequest& request, const llm::StreamSink& sink,
                             const llm::CancelFlag&) override {
    requests.push_back(request);
    if (answers_.empty()) {
      throw llm::LlmError(llm::ErrorKind::Malformed, "the script has no more answers");
    }
    llm::ChatResponse response;
    response.text = answers_.front();
    answers_.pop_front();
    if (sink) sink(response.text);
    response.finish_reason = "stop";
    response.model = "scripted";
    response.usage.input_tokens = 0;
    for (const auto& m : request.messages)
      response.usage.input_tokens += static_cast<int64_t>(m.text.size() / 4);
    response.usage.output_tokens = static_cast<int64_t>(response.text.size() / 4);
    return response;
  }
  std::string describe() const override { return "scripted"; }

  std::vector<llm::ChatRequest> requests;

 private:
  std::deque<std::string> answers_;
};

}  // namespace mk::agents::testing
