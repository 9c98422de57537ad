#include "agents/orchestration/llm_expander.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

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

// The function a new kernel file must define, in words: the candidate's entry point of the
// task's form (docs/tasks.md), or the run's kernel name when the user gave one.
std::string entry_point_of(const nlohmann::json& task, const std::string& kernel_name) {
  const std::string form = task.is_object() ? task.value("form", std::string()) : "";
  std::string name = kernel_name;
  if (name.empty() && task.is_object() && task.contains("entry") && task["entry"].is_string())
    name = task["entry"].get<std::string>();
  if (name.empty() && form == "infile") name = "candidate";
  if (name.empty() && form == "jaxbench") name = "workload";
  const std::string same =
      " taking the same parameters as the reference function (in the same order) and returning "
      "what it returns";
  if (name.empty())  // a MaxKernel task: its YAML decides
    return "the function the task's kernel_task.yaml names in `entry:`, else one with the "
           "reference function's own name (`computation`)," +
           same;
  return "a function `" + name + "`" + same;
}

// Run the planner (and the implementers) with the usage accounted whatever happens: an LlmError
// leaves what was spent in the request's unattributed usage, and propagates.
template <typename Body>
std::vector<Proposal> accounted(const ExpansionRequest& request, llm::Usage& spent, Body body) {
  try {
    return body();
  } catch (const llm::LlmError&) {
    // Budget, cancellation, a bad key: what was spent still counts; the search decides.
    if (request.unattributed_usage) add_usage(*request.unattributed_usage, spent);
    throw;
  }
}

// The usage of the whole expansion is carried by the first child, or reported separately.
void charge(const ExpansionRequest& request, std::vector<Proposal>& out, const llm::Usage& spent) {
  if (!out.empty())
    add_usage(out.front().usage, spent);
  else if (request.unattributed_usage)
    add_usage(*request.unattributed_usage, spent);
}

// What kind of failure an error text is, for a child's description: "lowering" (the compile
// check, as before), "compile" (the TPU compiler refused it: VMEM, layouts), "wrong result" (a
// correctness report), else the worker's stage word.
std::string failure_kind(const std::string& error) {
  const std::string head = error.substr(0, error.find(':'));
  if (head == "incorrect") return "wrong result";
  if (head == "compile" && error.find("the TPU compiler") != std::string::npos) return "compile";
  if (head == "lowering" || head == "trace" || head == "compile") return "lowering";
  return head.size() <= 20 ? head : "error";
}

// The lines of `after` that are not in `before` (at most four), as the fix a lesson keeps.
std::string changed_lines(const std::string& before, const std::string& after) {
  std::set<std::string> old_lines;
  std::istringstream b(before), a(after);
  for (std::string line; std::getline(b, line);) old_lines.insert(line);
  std::string out;
  int n = 0;
  for (std::string line; std::getline(a, line);) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || old_lines.count(line)) continue;
    if (++n > 4) break;
    out += (out.empty() ? "" : "; ") + line.substr(start);
  }
  return out;
}

}  // namespace

std::vector<Proposal> LlmExpander::implement_plan(const ExpansionRequest& request,
                                                  const AgentContext& context, const Plan& plan,
                                                  const Implement& implement, llm::Usage& spent) {
  std::vector<Proposal> out;
  std::set<std::string> seen = request.known_hashes;
  for (size_t i = 0; i < plan.strategies.size() && out.size() < request.max_children; ++i) {
    if (request.cancelled && request.cancelled()) break;
    Code code = implement(plan, i);
    add_usage(spent, code.usage);
    if (!code.ok()) {
      spdlog::warn("implementer ({}): {}", plan.strategies[i].name, code.error);
      continue;
    }
    // Debug lowering errors and wrong results before the candidate becomes a node.
    AgentContext debug_context = context;
    int debugged = 0;
    std::set<std::string> fixed_kinds;
    std::string wrong_result;  // the last correctness failure the debugger was sent
    bool repaired = false;     // the last fix was checked and nothing is left
    for (int attempt = 1; options_.candidate_error && attempt <= options_.max_debug_attempts + 1;
         ++attempt) {
      const std::string error = options_.candidate_error(code.source, request.cancelled);
      if (request.cancelled && request.cancelled()) break;
      if (error.empty()) {
        repaired = debugged > 0;
        if (!wrong_result.empty() && options_.record_fix)
          options_.record_fix(wrong_result,
                              changed_lines(debug_context.attempts.back().code, code.source));
        break;
      }
      if (attempt > options_.max_debug_attempts) break;  // the evaluation reports what is left
      debug_context.attempts.push_back({code.source, error, "", code.strategy});
      if (options_.retrieve) debug_context.knowledge = options_.retrieve(code.source, error);
      Code fixed = debug(client_, debug_context, code, error, attempt, options_.max_debug_attempts,
                         request.cancelled);
      add_usage(spent, fixed.usage);
      if (!fixed.ok()) break;  // the evaluation reports the remaining error
      const std::string kind = failure_kind(error);
      fixed_kinds.insert(kind);
      wrong_result = kind == "lowering" || kind == "compile" ? "" : error;
      code = std::move(fixed);
      ++debugged;
    }
    if (!seen.insert(candidate_hash(code.source)).second) continue;
    Proposal p;
    p.code = std::move(code.source);
    p.strategy = "llm:" + plan.strategies[i].name;
    p.description = plan.strategies[i].why;
    if (debugged > 0) {
      std::string what;
      for (const std::string& k : fixed_kinds) what += (what.empty() ? "" : ", ") + k;
      const std::string attempts =
          std::to_string(debugged) + (debugged == 1 ? " attempt)" : " attempts)");
      p.description += repaired ? " (" + what + " fixed by the debugger in " + attempts
                                : " (" + what + " not fixed by the debugger in " + attempts;
    }
    p.plan = plan_markdown(plan, i);
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<TuningSpace> LlmExpander::tuning_space(const std::string& code,
                                                     const std::string& kernel_name,
                                                     const std::string& metrics, size_t max_configs,
                                                     const std::function<bool()>& cancelled) {
  ExpansionRequest request;
  request.parent_code = code;
  request.kernel_name = kernel_name;
  return agents::tuning_space(&client_, context_for(request, ""), metrics, max_configs,
                              [&] { return cancelled && cancelled(); });
}

AgentContext LlmExpander::context_for(const ExpansionRequest& request,
                                      const std::string& history_label) const {
  AgentContext context;
  context.kernel_source = request.parent_code;
  context.kernel_name = request.kernel_name;
  context.task_summary = options_.task_summary;
  context.target_facts = options_.target_facts;
  context.token_budget = options_.token_budget;
  if (!request.history.empty()) {
    Attempt history;
    history.strategy = history_label;
    history.metrics = request.history;
    context.attempts.push_back(history);
  }
  return context;
}

std::vector<Proposal> LlmExpander::plan_and_implement(
    const ExpansionRequest& request, const AgentContext& context, const std::string& planner,
    const std::function<Plan()>& make_plan, const Implement& implement, llm::Usage& spent) {
  return accounted(request, spent, [&] {
    const Plan the_plan = make_plan();
    add_usage(spent, the_plan.usage);
    if (!the_plan.ok()) {
      spdlog::warn("{}: {}", planner, the_plan.error);
      return std::vector<Proposal>();
    }
    return implement_plan(request, context, the_plan, implement, spent);
  });
}

ParentAnalysis LlmExpander::analysis_of_parent(const ExpansionRequest& request,
                                               const AgentContext& context, llm::Usage& spent) {
  if (!request.parent_metrics.analysis.is_null())
    if (auto recorded = ParentAnalysis::from_json(request.parent_metrics.analysis))
      return *recorded;
  const nlohmann::json metrics = request.parent_metrics.to_json();
  ParentAnalysis out;
  try {
    ProfileFacts facts;
    facts.metrics = measurements_text(metrics);
    facts.diagnosis = diagnosis_text(*request.diagnosis);
    facts.device_profile = device_profile_text(metrics);
    const ProfileAnalysis answer = analyze_profile(client_, context, facts, request.cancelled);
    add_usage(spent, answer.usage);
    out.prompt_version = answer.prompt_version;
    if (answer.ok())
      out.analysis = answer.analysis;
    else
      out.error = answer.error;
  } catch (const llm::LlmError& e) {
    // These end the run whichever call meets them (the search decides); the rest only cost the
    // analysis.
    if (e.kind() == llm::ErrorKind::Cancelled || e.kind() == llm::ErrorKind::BudgetExceeded ||
        e.kind() == llm::ErrorKind::BadKey)
      throw;
    out.error = std::string("its call failed: ") + llm::to_string(e.kind()) + ": " + e.what();
  }
  if (!out.analysis)
    spdlog::warn("profile analyst: {}; the planner gets the rule diagnosis alone", out.error);
  if (request.record_analysis) request.record_analysis(out.to_json());
  return out;
}

std::vector<Proposal> LlmExpander::expand(const ExpansionRequest& request) {
  if (request.parent_is_reference) return write_from_reference(request, {});
  AgentContext context = context_for(request, "the path to this kernel");
  if (options_.retrieve) context.knowledge = options_.retrieve(request.parent_code, "");
  llm::Usage spent;
  // What limits the parent goes to the planner: the rule diagnosis always, the analyst's reading
  // of the numbers when it gave one. Without a diagnosis (--no-diagnosis) neither is used.
  ParentAnalysis analysis;
  std::string diagnosis;
  if (request.diagnosis) {
    analysis = analysis_of_parent(request, context, spent);
    diagnosis = planner_diagnosis_text(*request.diagnosis, analysis);
  }
  std::vector<Proposal> out = plan_and_implement(
      request, context, "planner",
      [&] { return plan(client_, context, diagnosis, request.cancelled); },
      [&](const Plan& p, size_t i) { return implement(client_, context, p, i, request.cancelled); },
      spent);
  if (request.diagnosis)
    for (Proposal& p : out)
      p.answers = llm_answer_text(*request.diagnosis, analysis, p.description);
  if (out.empty() && options_.fall_back_to_rules) {
    spdlog::info("LLM expansion gave nothing new; using the rule-based expander");
    out = rules_.expand(request);
  }
  charge(request, out, spent);
  return out;
}

std::vector<Proposal> LlmExpander::write_from_reference(
    const ExpansionRequest& request, const std::vector<Proposal>& start_kernels) {
  // The context's source is the task's file: the reference and the inputs it is called with.
  AgentContext context = context_for(request, "the search so far");
  ReferenceStart start;
  start.entry_point = entry_point_of(options_.task, request.kernel_name);
  for (const Proposal& k : start_kernels) {
    if (!start.start_kernel.empty()) start.start_kernel += "\n```\n\n```python\n";
    start.start_kernel += "# " + k.strategy + ": " + k.description + "\n" + k.code;
  }
  // A kernel finds Pallas passages better than a plain JAX function does.
  if (options_.retrieve)
    context.knowledge = options_.retrieve(
        start_kernels.empty() ? request.parent_code : start_kernels.front().code, "");
  llm::Usage spent;
  std::vector<Proposal> out = plan_and_implement(
      request, context, "planner (from the reference)",
      [&] { return plan_from_reference(client_, context, start, request.cancelled); },
      [&](const Plan& p, size_t i) {
        return implement_from_reference(client_, context, start, p, i, request.cancelled);
      },
      spent);
  if (out.empty()) spdlog::info("the LLM wrote no new kernel from the reference");
  charge(request, out, spent);
  return out;
}

}  // namespace mk::agents
