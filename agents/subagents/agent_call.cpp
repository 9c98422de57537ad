#include "agents/subagents/agent_call.h"

#include <spdlog/spdlog.h>

#include "agents/prompts/prompt_templates.h"
#include "agents/subagents/answer_parsers.h"

namespace mk::agents {

void add_usage(llm::Usage& total, const llm::Usage& more) {
  total.input_tokens += more.input_tokens;
  total.output_tokens += more.output_tokens;
  total.cached_input_tokens += more.cached_input_tokens;
  total.cost_usd += more.cost_usd;
}

llm::ChatRequest build_request(const AgentPrompt& prompt, const AgentContext& context) {
  const PromptTemplate& t = prompt_template(prompt.agent);
  int reserved = approx_tokens(t.system) + approx_tokens(t.user) + prompt.max_output_tokens / 8;
  for (const auto& [name, value] : prompt.extras) reserved += approx_tokens(value);
  const TrimmedContext trimmed = trim_to_budget(context, reserved);
  if (trimmed.dropped_attempts || trimmed.dropped_passages || trimmed.over_budget) {
    spdlog::info("{}: context trimmed to ~{} tokens (dropped {} attempts, {} passages{})",
                 prompt.agent, trimmed.tokens, trimmed.dropped_attempts, trimmed.dropped_passages,
                 trimmed.over_budget ? "; still over budget" : "");
  }
  auto values = context_values(trimmed.context);
  for (const auto& [name, value] : prompt.extras) values[name] = value;
  llm::ChatRequest request;
  request.purpose = prompt.agent;
  request.max_output_tokens = prompt.max_output_tokens;
  request.messages.push_back({llm::Role::System, render_prompt(t.system, values)});
  request.messages.push_back({llm::Role::User, render_prompt(t.user, values)});
  return request;
}

std::string retry_message(const std::string& parse_error) {
  return "Your answer could not be used: " + parse_error +
         "\nAnswer again, in exactly the format the instructions ask for.";
}

void call_with_one_retry(llm::Client& client, const llm::ChatRequest& request,
                         const std::function<void(const std::string&)>& parse,
                         AgentOutcome& outcome, const llm::CancelFlag& cancelled) {
  llm::ChatResponse first = client.complete(request, {}, cancelled);
  ++outcome.llm_calls;
  add_usage(outcome.usage, first.usage);
  std::string first_error;
  try {
    parse(first.text);
    return;
  } catch (const AnswerFormatError& e) {
    first_error = e.what();
  }
  spdlog::info("{}: malformed answer ({}); retrying once", request.purpose, first_error);
  llm::ChatRequest retry = request;
  retry.messages.push_back({llm::Role::Assistant, first.text});
  retry.messages.push_back({llm::Role::User, retry_message(first_error)});
  llm::ChatResponse second = client.complete(retry, {}, cancelled);
  ++outcome.llm_calls;
  add_usage(outcome.usage, second.usage);
  try {
    parse(second.text);
  } catch (const AnswerFormatError& e) {
    outcome.error = "the " + request.purpose + " answered in the wrong format twice: first " +
                    first_error + "; then " + e.what();
  }
}

void ask_agent(llm::Client& client, const AgentContext& context, const AgentPrompt& prompt,
               const std::function<void(const std::string&)>& parse, AgentOutcome& outcome,
               const llm::CancelFlag& cancelled) {
  outcome.prompt_version = prompt_template(prompt.agent).version;
  call_with_one_retry(client, build_request(prompt, context), parse, outcome, cancelled);
}

}  // namespace mk::agents
