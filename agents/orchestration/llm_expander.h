// The expander that uses an LLM: the Profile analyst reads the parent's numbers and its rule
// diagnosis (once per parent: its answer is recorded on the node), the Planner proposes strategies
// for the parent with that diagnosis in its prompt, the Implementer writes one child per strategy,
// and a child that does not lower, or lowers but gives wrong numbers (the worker's correctness
// report), goes to the Debugger (bounded attempts, with the history of earlier attempts) before
// it becomes a node. Falls back to the rule-based expander when the LLM
// has nothing usable, so a search never stalls on bad answers.
// A parent that is the task's plain JAX reference (no kernel yet) is written FROM the reference
// instead: the from-reference Planner and Implementer, the same Debugger, and no rule fallback
// (the rules need a kernel to change).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/llm/llm_client.h"
#include "agents/orchestration/expander.h"
#include "agents/orchestration/profile_analysis.h"
#include "agents/orchestration/rule_expander.h"
#include "agents/subagents/subagents.h"

namespace mk::agents {

struct LlmExpanderOptions {
  std::string task_summary;  // the task object (JSON text), as the run keeps it
  nlohmann::json task = nlohmann::json::object();  // the same task (RunRecord::task)
  std::string target_facts;
  // Knowledge passages for a kernel (and an error text, for the debugger), best first.
  std::function<std::vector<std::string>(const std::string& source, const std::string& error)>
      retrieve;
  // What is wrong with a candidate ("" when nothing): its lowering or compile error, or its
  // correctness report when it runs but gives wrong numbers (Evaluator::debug_error); null: no
  // debugging before evaluation. `cancelled` is the search's, so a candidate that hangs while it
  // is traced cannot hold a cancelled run.
  std::function<std::string(const std::string& source, const std::function<bool()>& cancelled)>
      candidate_error;
  int max_debug_attempts = 2;
  // Called when the debugger turned a wrong result into a right one: the failure it fixed (with
  // its correctness report) and the lines the fix changed, to keep as a lesson (null: none).
  std::function<void(const std::string& failure, const std::string& fix)> record_fix;
  int token_budget = 12000;
  bool fall_back_to_rules = true;
};

class LlmExpander : public Expander {
 public:
  LlmExpander(llm::Client& client, LlmExpanderOptions options)
      : client_(client), options_(std::move(options)) {}
  // request.parent_is_reference: write_from_reference(request, {}).
  std::vector<Proposal> expand(const ExpansionRequest& request) override;
  std::string name() const override { return "llm"; }
  // The Autotuner over the derived space of `code`, which may add values to its parameters.
  std::optional<TuningSpace> tuning_space(const std::string& code, const std::string& kernel_name,
                                          const std::string& metrics, size_t max_configs,
                                          const std::function<bool()>& cancelled) override;

  // Kernels written from the task's reference (request.parent_code, the task's file), with
  // `start_kernels` (what the templates wrote from it; may be empty) shown as a starting point.
  // Up to request.max_children new hashes; the usage of the whole call is on the first proposal,
  // else in request.unattributed_usage. Empty when the LLM gave nothing usable.
  std::vector<Proposal> write_from_reference(const ExpansionRequest& request,
                                             const std::vector<Proposal>& start_kernels);

 private:
  using Implement = std::function<Code(const Plan&, size_t strategy_index)>;
  // One proposal per strategy of `plan` (up to max_children new hashes): implement, then the
  // debugger on lowering errors (bounded attempts). Adds every call's usage to `spent`.
  std::vector<Proposal> implement_plan(const ExpansionRequest& request, const AgentContext& context,
                                       const Plan& plan, const Implement& implement,
                                       llm::Usage& spent);
  // The context every call shares: the parent's source, the task, the target, and the search's
  // history under `history_label`.
  AgentContext context_for(const ExpansionRequest& request, const std::string& history_label) const;
  // `make_plan`, then implement_plan, with the usage accounted whatever happens; `planner` names
  // the planner in the warning when the plan is unusable.
  std::vector<Proposal> plan_and_implement(const ExpansionRequest& request,
                                           const AgentContext& context, const std::string& planner,
                                           const std::function<Plan()>& make_plan,
                                           const Implement& implement, llm::Usage& spent);

  // The parent's analysis: the one its node recorded (request.parent_metrics.analysis), else
  // the Profile analyst's answer now, recorded through request.record_analysis. A failure (a
  // malformed answer twice, an LLM error other than cancellation, the budget or a rejected key) is
  // recorded as an analysis with an error and logged: the planner then gets the rule diagnosis
  // alone. Adds the call's usage to `spent`.
  ParentAnalysis analysis_of_parent(const ExpansionRequest& request, const AgentContext& context,
                                    llm::Usage& spent);

  llm::Client& client_;
  LlmExpanderOptions options_;
  RuleExpander rules_;
};

}  // namespace mk::agents
