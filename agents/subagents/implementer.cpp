// Implementer and Debugger: answers that are whole Python files.
#include <stdexcept>

#include "agents/subagents/reference_prompt.h"
#include "agents/subagents/subagents.h"

namespace mk::agents {

namespace {

// The plan's strategy `strategy_index` implemented through the template `agent`, whose "plan"
// placeholder gets the strategy; `extras` are the template's other values.
Code implement_with(llm::Client& client, const AgentContext& context, const Plan& plan,
                    size_t strategy_index, const std::string& agent,
                    std::map<std::string, std::string> extras, const llm::CancelFlag& cancelled) {
  Code result;
  if (strategy_index >= plan.strategies.size()) {
    result.error = "the plan has no strategy " + std::to_string(strategy_index) + " (it has " +
                   std::to_string(plan.strategies.size()) + ")";
    return result;
  }
  const Strategy& s = plan.strategies[strategy_index];
  result.strategy = s.name;
  extras["plan"] = s.name + ": " + s.why + " Expected effect: " + s.expected_effect;
  ask_agent(
      client, context, {agent, std::move(extras), 8192},
      [&](const std::string& answer) { result.source = parse_python_file_answer(answer); }, result,
      cancelled);
  return result;
}

// The worker's error or correctness report, bounded: the report is already short (the worker
// caps it), but a traceback is not; the head says what failed, the tail where.
std::string capped_error(const std::string& error) {
  constexpr size_t kMax = 6000;
  if (error.size() <= kMax) return error;
  return error.substr(0, kMax - 1500) + "\n[... cut to fit the budget]\n" +
         error.substr(error.size() - 1400);
}

}  // namespace

Code implement(llm::Client& client, const AgentContext& context, const Plan& plan,
               size_t strategy_index, const llm::CancelFlag& cancelled) {
  return implement_with(client, context, plan, strategy_index, "implementer", {}, cancelled);
}

// With no kernel yet: the context's kernel_source is the task's plain JAX reference.
Code implement_from_reference(llm::Client& client, const AgentContext& context,
                              const ReferenceStart& start, const Plan& plan, size_t strategy_index,
                              const llm::CancelFlag& cancelled) {
  return implement_with(client, context, plan, strategy_index, "implementer_from_reference",
                        reference_prompt_values(start), cancelled);
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
                      {"errors", error.empty() ? "(no message)" : capped_error(error)},
                      {"attempt", std::to_string(attempt)},
                      {"max_attempts", std::to_string(max_attempts)}},
                     8192};
  ask_agent(
      client, context, prompt,
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
