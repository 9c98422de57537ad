// Planner and ProfileAnalyst: JSON answers about what to try next.
#include "agents/subagents/subagents.h"

#include "agents/subagents/reference_prompt.h"

namespace mk::agents {

namespace {

Plan plan_with(llm::Client& client, const AgentContext& context, AgentPrompt prompt,
               const llm::CancelFlag& cancelled) {
  Plan result;
  ask_agent(
      client, context, prompt,
      [&](const std::string& answer) { result.strategies = parse_plan_answer(answer); }, result,
      cancelled);
  return result;
}

}  // namespace

Plan plan(llm::Client& client, const AgentContext& context, const llm::CancelFlag& cancelled) {
  return plan(client, context, "", cancelled);
}

Plan plan(llm::Client& client, const AgentContext& context, const std::string& diagnosis,
          const llm::CancelFlag& cancelled) {
  return plan_with(client, context,
                   {"planner", {{"diagnosis", diagnosis.empty() ? "(none)" : diagnosis}}, 2048},
                   cancelled);
}

// With no kernel yet: the context's kernel_source is the task's plain JAX reference.
Plan plan_from_reference(llm::Client& client, const AgentContext& context,
                         const ReferenceStart& start, const llm::CancelFlag& cancelled) {
  return plan_with(client, context,
                   {"planner_from_reference", reference_prompt_values(start), 2048}, cancelled);
}

ProfileAnalysis analyze_profile(llm::Client& client, const AgentContext& context,
                                const ProfileFacts& facts, const llm::CancelFlag& cancelled) {
  auto or_none = [](const std::string& text) { return text.empty() ? "(none)" : text; };
  ProfileAnalysis result;
  ask_agent(
      client, context,
      {"profile_analyst",
       {{"metrics", or_none(facts.metrics)},
        {"diagnosis", or_none(facts.diagnosis)},
        {"device_profile", or_none(facts.device_profile)}},
       2048},
      [&](const std::string& answer) { result.analysis = parse_analysis_answer(answer); }, result,
      cancelled);
  return result;
}

}  // namespace mk::agents
