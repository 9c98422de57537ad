#include "service/searches.h"

#include <algorithm>
#include <stdexcept>

#include "agents/orchestration/candidate_evaluator.h"
#include "agents/orchestration/reference_expander.h"
#include "agents/orchestration/run_lessons.h"
#include "knowledge/tpu_generations.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

using nlohmann::json;

json shrink_option(int factor) {
  if (factor < 2) throw std::invalid_argument("--shrink wants a factor >= 2");
  return factor;
}

std::string create_search(agents::RunStore& runs, const NewSearch& search) {
  agents::RunRecord run;
  run.mode = search.mode;
  run.strategy = search.params.strategy;
  run.file = search.file.string();
  run.kernel = search.kernel;
  run.target = search.target;
  run.host = search.host;
  run.llm = search.llm;
  run.params.search = search.params;
  run.params.from_reference = search.start == SearchStart::Reference;
  if (search.evaluate_options.is_object()) run.params.evaluate = search.evaluate_options;
  run.params.extra_shapes = search.extra_shapes;
  run.budget = search.budget;
  run.status = agents::RunStatus::running;
  run.task = search.task;
  return runs.create_run(run);
}

bool starts_from_reference(const agents::RunRecord& run) {
  return run.params.from_reference;
}

namespace {
// "tpu", "gpu" or "cpu" from the hosts' hello ("" when none answers): what the evaluate options
// and the automatic autotune phase are chosen from.
std::string platform_of(tpu::JobRunner& hosts) {
  const tpu::WorkerReply hello = hosts.hello();
  return hello.ok() ? hello.body.value("platform", std::string()) : "";
}
}  // namespace

json evaluate_options_for(tpu::HostPool& hosts, const knowledge::TpuGeneration& target) {
  const std::string platform = platform_of(hosts);
  json options = json::object();
  if (platform == "cpu")
    options["timing"] = {
        {"warmup", 0}, {"min_runs", 1}, {"max_runs", 1}, {"min_seconds", 0}, {"max_seconds", 0}};
  // On a TPU a measured time below the chip's roofline is a cheat, not a speedup: the worker
  // flags it (faster_than_hardware) with the fastest peak of any dtype and the HBM bandwidth.
  if (platform == "tpu" && target.hbm_bandwidth_bytes_per_s && !target.peak_flops_per_s.empty()) {
    double peak = 0;
    for (const auto& [dtype, flops] : target.peak_flops_per_s) peak = std::max(peak, flops);
    options["hardware"] = {{"name", target.name},
                           {"peak_flops_per_s", peak},
                           {"hbm_bandwidth_bytes_per_s", *target.hbm_bandwidth_bytes_per_s}};
  }
  return options;
}

int resolve_autotune_phase(agents::RunStore& runs, const std::string& run_id,
                           tpu::JobRunner& hosts) {
  auto run = runs.run(run_id);
  if (!run) return 0;
  int& configs = run->params.search.autotune_configs;
  if (configs != agents::SearchParams::kAutotuneAutomatic) return configs;
  const std::string platform = platform_of(hosts);
  configs = platform == "tpu" || platform == "gpu" ? agents::SearchParams::kAutotuneOnDevices : 0;
  runs.update_run(*run);  // a resume tunes as the first session did
  return configs;
}

void record_xla_baseline(agents::RunStore& runs, const std::string& run_id,
                         agents::CandidateEvaluator& evaluator,
                         const std::function<bool()>& cancelled) {
  auto run = runs.run(run_id);
  if (!run || run->params.xla) return;  // a resume keeps the first answer
  const agents::Evaluation xla = evaluator.evaluate_reference(cancelled);
  agents::XlaBaseline entry;
  entry.time_kind = xla.time_kind;
  entry.score_s = xla.score_s;
  entry.error = xla.error;
  const json prediction = xla.metrics.value("prediction", json::object());
  // The roofline of the minimum work: the reference's FLOPs and the bytes any program moves.
  if (prediction.contains("compute_s") && prediction.contains("memory_s"))
    entry.roofline_s =
        std::max(prediction["compute_s"].get<double>(), prediction["memory_s"].get<double>());
  run->params.xla = entry;
  runs.update_run(*run);
}

SearchOutcome drive_search(agents::RunStore& runs, tpu::HostPool& hosts, knowledge::Store* cache,
                           const std::string& run_id, const std::string& baseline_code,
                           SearchSetup setup, const agents::GraphSearch::ProgressSink& on_progress,
                           const std::function<bool()>& cancelled) {
  auto run = runs.run(run_id);
  if (!run) throw std::runtime_error("no run '" + run_id + "' in the store");
  const knowledge::TpuGeneration* generation = knowledge::find_tpu_generation(run->target);
  if (!generation) throw std::runtime_error("unknown TPU generation '" + run->target + "'");
  tpu::KernelJobs jobs(hosts, cache);
  agents::EvaluationSetup evaluation;
  evaluation.file = run->file;
  evaluation.task = run->task;
  if (!run->kernel.empty()) evaluation.kernel = run->kernel;
  evaluation.use_cache = setup.use_cache;
  evaluation.options.update(evaluate_options_for(hosts, *generation));
  run->params.search.autotune_configs = resolve_autotune_phase(runs, run_id, hosts);
  if (run->params.evaluate.is_object()) evaluation.options.update(run->params.evaluate);

  agents::ExpanderSetup& llm = setup.llm;
  llm.llm_spec = run->llm;
  llm.budget = run->budget;
  llm.kernel_class = setup.kernel_class;
  llm.task = run->task;
  llm.task_summary = run->task.dump();
  llm.store = cache;
  // The shapes every candidate is checked at, read from the kernel the run starts from (the
  // first kernel written from a reference). Before the search loads the run it writes back.
  const std::string shapes_from = !starts_from_reference(*run) ? baseline_code
                                  : setup.from_reference.empty()
                                      ? std::string()
                                      : setup.from_reference.front().code;
  evaluation.extra_shapes =
      run_extra_shapes(runs, run_id, jobs, evaluation, shapes_from, llm, cancelled);
  agents::CandidateEvaluator evaluator(jobs, evaluation, *generation);
  llm.evaluator = &evaluator;
  agents::ExpanderBundle expander;
  try {
    expander = agents::make_expander(llm, *generation);
  } catch (const std::exception& e) {
    throw std::runtime_error("--llm " + run->llm + ": " + e.what());
  }
  agents::ReferenceStartExpander start(std::move(setup.from_reference), *expander.expander);
  agents::Expander& expand =
      starts_from_reference(*run) ? static_cast<agents::Expander&>(start) : *expander.expander;
  // A run from a kernel is also scored against XLA (the reference), once per run, and against
  // the roofline of the task's minimum work: tables show both next to the speedup over the
  // kernel as written. Before the search loads the run, whose params it writes back.
  if (!starts_from_reference(*run)) record_xla_baseline(runs, run_id, evaluator, cancelled);
  agents::GraphSearch search(runs, evaluator, expand, run_id);

  SearchOutcome out;
  out.run = search.run(baseline_code, on_progress, cancelled);
  out.nodes = runs.nodes(run_id);
  if (cache && !setup.kernel_class.empty() && out.run.status == agents::RunStatus::done) {
    try {
      agents::record_run_lessons(*cache, out.run, out.nodes, setup.kernel_class);
    } catch (const std::exception& e) {
      out.warning = std::string("lessons not recorded: ") + e.what();
    }
  }
  return out;
}

}  // namespace mk::service
