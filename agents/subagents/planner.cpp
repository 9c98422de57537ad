// Planner and ProfileAnalyst: JSON answers about what to try next.
#include "agents/subagents/subagents.h"

#include "agents/prompts/prompt_templates.h"

namespace mk::agents {

Plan plan(llm::Client& client, const AgentContext& context, const llm::CancelFlag& cancelled) {
  Plan result;
  AgentPrompt prompt{"planner", {}, 2048};
  result.prompt_version = prompt_template(prompt.agent).version;
  call_with_one_retry(
      client, build_request(prompt, context),
      [&](const std::string& answer) { result.strategies = parse_plan_answer(answer); }, result,
      cancelled);
  return result;
}

ProfileAnalysis analyze_profile(llm::Client& client, const AgentContext& context,
                                const std::string& metrics, const llm::CancelFlag& cancelled) {
  ProfileAnalysis result;
  AgentPrompt prompt{"profile_analyst", {{"metrics", metrics.empty() ? "(none)" : metrics}}, 2048};
  result.prompt_version = prompt_template(prompt.agent).version;
  call_with_one_retry(
      client, build_request(prompt, context),
      [&](const std::string& answer) { result.analysis = parse_analysis_answer(answer); }, result,
      cancelled);
  return result;
}

}  // namespace mk::agents
