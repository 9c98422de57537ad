#include "service/search_shapes.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "agents/subagents/subagents.h"

namespace mk::service {

using nlohmann::json;

namespace {

constexpr size_t kMaxShapes = 8;  // the worker checks at most 8 per evaluation

// The settled set the root's evaluation recorded, if it was evaluated.
std::optional<agents::ExtraShapes> settled_by_root(const std::vector<agents::NodeRecord>& nodes) {
  for (const agents::NodeRecord& n : nodes) {
    if (n.id != 0 || n.finished_at == 0) continue;
    if (const auto set = n.metrics.facts.find("extra_shapes_set"); set != n.metrics.facts.end())
      return agents::ExtraShapes::from_json(*set);
  }
  return std::nullopt;
}

// The Tester's shapes, added to `shapes`; its usage charged to the run's cost.
void ask_tester(agents::ExtraShapes& shapes, const agents::TaskSizes& sizes, int max_shapes,
                const std::string& kernel_code, const agents::RunRecord& run,
                const agents::ExpanderSetup& llm, agents::RunCost& cost,
                const std::function<bool()>& cancelled) {
  try {
    std::unique_ptr<llm::Client> client = agents::make_llm_client(llm);
    if (!client) return;
    agents::AgentContext context;
    context.kernel_source = kernel_code;
    context.kernel_name = run.kernel;
    context.task_summary = llm.task_summary;
    const agents::ExtraCases answer = agents::extra_test_cases(
        *client, context, sizes.input_shapes, static_cast<size_t>(max_shapes),
        [&] { return cancelled && cancelled(); });
    cost.tokens_in += answer.usage.input_tokens;
    cost.tokens_out += answer.usage.output_tokens;
    cost.usd += answer.usage.cost_usd;
    if (!answer.ok()) {
      shapes.notes.push_back("the Tester's shapes were not usable: " + answer.error);
      return;
    }
    agents::add_shape_cases(shapes.cases, answer.shapes, kMaxShapes);
  } catch (const std::exception& e) {
    shapes.notes.push_back(std::string("the Tester was not asked: ") + e.what());
  }
}

}  // namespace

std::optional<agents::ExtraShapes> run_extra_shapes(
    agents::RunStore& runs, const std::string& run_id, tpu::KernelJobs& jobs,
    const agents::EvaluationSetup& evaluation, const std::string& kernel_code,
    const agents::ExpanderSetup& llm, const std::function<bool()>& cancelled) {
  const auto start = std::chrono::steady_clock::now();
  auto run = runs.run(run_id);
  if (!run) return std::nullopt;
  if (!run->params.extra_shapes) return std::nullopt;
  agents::ExtraShapesChoice& asked = *run->params.extra_shapes;
  if (!asked.set.is_null()) {
    if (auto settled = settled_by_root(runs.nodes(run_id))) return settled;
    return agents::ExtraShapes::from_json(asked.set);
  }
  const bool from_reference = run->params.from_reference;

  agents::ExtraShapes shapes;
  if (kernel_code.empty()) {
    shapes.notes.push_back("none: no kernel to read block sizes from");
  } else {
    const tpu::JobResult lowered =
        jobs.lower(agents::lowering_request(evaluation, kernel_code), cancelled);
    if (!lowered.reply.ok()) {
      shapes.notes.push_back("none: the kernel does not lower (" + lowered.reply.message + ")");
    } else {
      const agents::TaskSizes sizes = agents::TaskSizes::from_lowering(lowered.reply.body);
      if (asked.rules) {
        const agents::RuleShapes rules = agents::rule_shapes(sizes);
        agents::add_shape_cases(shapes.cases, rules.cases, kMaxShapes);
        if (!rules.none.empty()) shapes.notes.push_back("rules: none (" + rules.none + ")");
      }
      if (asked.tester > 0 && llm.llm_spec != "none" && !llm.llm_spec.empty())
        ask_tester(shapes, sizes, asked.tester, kernel_code, *run, llm, run->cost, cancelled);
    }
  }
  // A run from a reference: its root is the oracle, so every shape is required at once.
  shapes.settled = from_reference || shapes.cases.empty();
  asked.set = shapes.to_json();
  // Choosing the shapes is the run's time too (a seconds budget counts it).
  run->params.state.elapsed_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  runs.update_run(*run);
  spdlog::info("run {}: {}", run_id, shapes.summary());
  return shapes;
}

json extra_shapes_json(const agents::RunRecord& run, const std::vector<agents::NodeRecord>& nodes) {
  if (!run.params.extra_shapes || run.params.extra_shapes->set.is_null()) return json();
  if (auto settled = settled_by_root(nodes)) return settled->to_json();
  return run.params.extra_shapes->set;
}

std::string extra_shapes_summary(const agents::RunRecord& run,
                                 const std::vector<agents::NodeRecord>& nodes) {
  const json set = extra_shapes_json(run, nodes);
  if (set.is_null()) return "";
  return agents::ExtraShapes::from_json(set).summary();
}

}  // namespace mk::service
