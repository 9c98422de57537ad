// Implementer and Debugger: answers that are whole Python files.
#include <stdexcept>

#include "agents/prompts/prompt_templates.h"
#include "agents/subagents/subagents.h"

namespace mk::agents {

namespace {

std::string describe(const Strategy& s) {
  return s.name + ": " + s.why + " Expected effect: " + s.expected_effect;
}

}  // namespace

Code implement(llm::Client& client, const AgentContext& context, const Plan& plan,
               size_t strategy_index, const llm::CancelFlag& cancelled) {
  Code result;
  if (strategy_index >= plan.strategies.size()) {
    result.error = "the plan has no strategy " + std::to_string(strategy_index) + " (it has " +
                   std::to_string(plan.strategies.size()) + ")";
    return result;
  }
  const Strategy& strategy = plan.strategies[strategy_index];
  result.strategy = strategy.name;
  AgentPrompt prompt{"implementer", {{"plan", describe(strategy)}}, 8192};
  result.prompt_version = prompt_template(prompt.agent).version;
  call_with_one_retry(
      client, build_request(prompt, context),
      [&](const std::string& answer) { result.source = parse_python_file_answer(answer); }, result,
      cancelled);
  return result;
}

Code debug(llm::Client& client, const AgentContext& context, const Code& failing,
           const std::string& error, int attempt, int max_attempts,
           const llm::CancelFlag& cancelled) {
  Code result;
  result.strategy = failing.strategy;
  if (max_attempts < 1 || attempt < 1 || attempt > max_attempts) {
    result.error = "debug attempt " + std::to_string(attempt) + " is outside 1.." +
                   std::to_string(max_attempts) + "; giving up on this candidate";
    return result;
  }
  AgentPrompt prompt{"debugger",
                     {{"failing_code", with_line_numbers(failing.source)},
                      {"errors", error.empty() ? "(no message)" : error},
                      {"attempt", std::to_string(attempt)},
                      {"max_attempts", std::to_string(max_attempts)}},
                     8192};
  result.prompt_version = prompt_template(prompt.agent).version;
  call_with_one_retry(
      client, build_request(prompt, context),
      [&](const std::string& answer) {
        std::string fixed = parse_python_file_answer(answer);
        if (fixed == failing.source) {
          throw AnswerFormatError("the file is unchanged; change it to fix the error");
        }
        result.source = std::move(fixed);
      },
      result, cancelled);
  return result;
}

}  // namespace mk::agents
