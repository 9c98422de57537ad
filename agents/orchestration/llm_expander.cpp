#include "agents/orchestration/llm_expander.h"

#include <spdlog/spdlog.h>

#include "agents/subagents/subagents.h"

namespace mk::agents {

namespace {

std::string plan_markdown(const Plan& plan, size_t chosen) {
  std::string out = "# Plan\n\n";
  for (size_t i = 0; i < plan.strategies.size(); ++i) {
    const Strategy& s = plan.strategies[i];
    out += std::string(i == chosen ? "- **" : "- ") + s.name + (i == chosen ? "**" : "") + ": " +
           s.why;
    if (!s.expected_effect.empty()) out += " (expected: " + s.expected_effect + ")";
    out += "\n";
  }
  return out;
}

}  // namespace

std::vector<Proposal> LlmExpander::expand(const ExpansionRequest& request) {
  AgentContext context;
  context.kernel_source = request.parent_code;
  context.kernel_name = request.kernel_name;
  context.task_summary = options_.task_summary;
  context.target_facts = options_.target_facts;
  context.token_budget = options_.token_budget;
  if (options_.retrieve) context.knowledge = options_.retrieve(request.parent_code, "");
  if (!request.history.empty()) {
    Attempt history;
    history.strategy = "the path to this kernel";
    history.metrics = request.history;
    context.attempts.push_back(history);
  }

  std::vector<Proposal> out;
  std::set<std::string> seen = request.known_hashes;
  llm::Usage spent;
  try {
    const Plan the_plan = plan(client_, context, request.cancelled);
    spent = the_plan.usage;
    if (!the_plan.ok()) spdlog::warn("planner: {}", the_plan.error);
    for (size_t i = 0;
         the_plan.ok() && i < the_plan.strategies.size() && out.size() < request.max_children;
         ++i) {
      if (request.cancelled && request.cancelled()) break;
      Code code = implement(client_, context, the_plan, i, request.cancelled);
      add_usage(spent, code.usage);
      if (!code.ok()) {
        spdlog::warn("implementer ({}): {}", the_plan.strategies[i].name, code.error);
        continue;
      }
      // Debug lowering errors before the candidate costs an evaluation.
      AgentContext debug_context = context;
      int debugged = 0;
      for (int attempt = 1; options_.lowering_error && attempt <= options_.max_debug_attempts;
           ++attempt) {
        const std::string error = options_.lowering_error(code.source);
        if (error.empty()) break;
        debug_context.attempts.push_back({code.source, error, "", code.strategy});
        if (options_.retrieve) debug_context.knowledge = options_.retrieve(code.source, error);
        Code fixed = debug(client_, debug_context, code, error, attempt,
                           options_.max_debug_attempts, request.cancelled);
        add_usage(spent, fixed.usage);
        if (!fixed.ok()) break;  // the evaluation reports the remaining error
        code = std::move(fixed);
        ++debugged;
      }
      if (!seen.insert(candidate_hash(code.source)).second) continue;
      Proposal p;
      p.code = std::move(code.source);
      p.strategy = "llm:" + the_plan.strategies[i].name;
      p.description = the_plan.strategies[i].why;
      if (debugged > 0)
        p.description += " (lowering fixed by the debugger in " + std::to_string(debugged) +
                         (debugged == 1 ? " attempt)" : " attempts)");
      p.plan = plan_markdown(the_plan, i);
      out.push_back(std::move(p));
    }
  } catch (const llm::LlmError&) {
    // Budget, cancellation, a bad key: what was spent still counts; the search decides.
    if (request.unattributed_usage) add_usage(*request.unattributed_usage, spent);
    throw;
  }
  if (out.empty() && options_.fall_back_to_rules) {
    spdlog::info("LLM expansion gave nothing new; using the rule-based expander");
    out = rules_.expand(request);
  }
  // The usage of the whole expansion is carried by the first child, or reported separately.
  if (!out.empty())
    add_usage(out.front().usage, spent);
  else if (request.unattributed_usage)
    add_usage(*request.unattributed_usage, spent);
  return out;
}

}  // namespace mk::agents
