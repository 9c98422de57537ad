// Planner and Implementer when there is no kernel yet: they work from the task's plain JAX
// reference (the context's kernel_source), with the templates' kernel as a starting point.
#include "agents/prompts/prompt_templates.h"
#include "agents/subagents/subagents.h"

namespace mk::agents {

namespace {

std::map<std::string, std::string> reference_values(const ReferenceStart& start) {
  return {{"entry_point", start.entry_point.empty() ? "(as the task says)" : start.entry_point},
          {"start_kernel", start.start_kernel.empty()
                               ? std::string("(none: no template covers this reference)")
                               : "```python\n" + start.start_kernel + "\n```"}};
}

}  // namespace

Plan plan_from_reference(llm::Client& client, const AgentContext& context,
                         const ReferenceStart& start, const llm::CancelFlag& cancelled) {
  Plan result;
  AgentPrompt prompt{"planner_from_reference", reference_values(start), 2048};
  result.prompt_version = prompt_template(prompt.agent).version;
  call_with_one_retry(
      client, build_request(prompt, context),
      [&](const std::string& answer) { result.strategies = parse_plan_answer(answer); }, result,
      cancelled);
  return result;
}

Code implement_from_reference(llm::Client& client, const AgentContext& context,
                              const ReferenceStart& start, const Plan& plan, size_t strategy_index,
                              const llm::CancelFlag& cancelled) {
  Code result;
  if (strategy_index >= plan.strategies.size()) {
    result.error = "the plan has no strategy " + std::to_string(strategy_index) + " (it has " +
                   std::to_string(plan.strategies.size()) + ")";
    return result;
  }
  const Strategy& strategy = plan.strategies[strategy_index];
  result.strategy = strategy.name;
  std::map<std::string, std::string> extras = reference_values(start);
  extras["plan"] =
      strategy.name + ": " + strategy.why + " Expected effect: " + strategy.expected_effect;
  AgentPrompt prompt{"implementer_from_reference", std::move(extras), 8192};
  result.prompt_version = prompt_template(prompt.agent).version;
  call_with_one_retry(
      client, build_request(prompt, context),
      [&](const std::string& answer) { result.source = parse_python_file_answer(answer); }, result,
      cancelled);
  return result;
}

}  // namespace mk::agents
