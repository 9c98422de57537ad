// Auto and graph-search runs, wired once for every front end: a run is created in the RunStore
// from what the user asked, then driven (or resumed) on a host pool with the evaluator, the
// expander and the GraphSearch built here. The CLI prints the outcome and the language server
// turns it into diagnostics and lenses; neither builds a search itself.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/candidate_evaluator.h"
#include "agents/orchestration/expander_factory.h"
#include "agents/orchestration/graph_search.h"
#include "agents/orchestration/run_store.h"
#include "agents/orchestration/search_params.h"
#include "knowledge/store.h"
#include "knowledge/tpu_generations.h"
#include "service/search_shapes.h"
#include "tpu/host/host_pool.h"

namespace mk::service {

// How a search starts: from a kernel the user wrote (its root is that kernel), or from a plain
// JAX reference (the root is the reference as XLA runs it; generated kernels are its children).
enum class SearchStart { Kernel, Reference };

struct NewSearch {
  std::string mode = "auto";  // "auto" | "graph"
  agents::SearchParams params;
  agents::Budget budget;
  std::filesystem::path file;  // the kernel file, or the task's anchor for a reference start
  std::string kernel;          // entry point ("" = the task's default)
  std::string target = "v5e";
  std::string host;  // the host list as the user named it ("local", "a,b")
  std::string llm = "none";
  nlohmann::json task;  // from tpu::locate_task / tpu::locate_reference_task
  SearchStart start = SearchStart::Kernel;
  // Extra fields of every evaluate request, kept with the run so a resume evaluates the same
  // way: e.g. {"shrink": 8}, correctness on a smaller instance of the task (docs/tasks.md).
  nlohmann::json evaluate_options = nlohmann::json::object();
  // Extra input shapes every candidate is checked at (docs/optimize.md); nullopt = none.
  std::optional<agents::ExtraShapesChoice> extra_shapes = agents::ExtraShapesChoice{};
};

// The evaluate option for correctness on the task shrunk by `factor` (docs/tasks.md); throws
// std::invalid_argument for a factor below 2.
nlohmann::json shrink_option(int factor);

// Records the run (status "running") and returns its id.
std::string create_search(agents::RunStore& runs, const NewSearch& search);

// True when the run starts from the reference (the root is XLA, not a kernel).
bool starts_from_reference(const agents::RunRecord& run);

struct SearchSetup {
  agents::ExpanderSetup llm;  // llm_spec is replaced by the run's; budget by the run's
  bool use_cache = true;
  std::string kernel_class;  // lessons are recorded for it when the run is done ("" = none)
  // Children of the reference root when the run starts from one: the generated kernel (and
  // any the caller adds); ignored for a kernel start.
  std::vector<agents::Proposal> from_reference;
};

struct SearchOutcome {
  agents::RunRecord run;
  std::vector<agents::NodeRecord> nodes;
  std::string warning;  // e.g. lessons that could not be recorded
};

// Runs or resumes `run_id` until a stop rule, cancellation or failure. `baseline_code` is the
// root's code for a new run (the kernel, or the reference's source). Throws std::runtime_error
// for setup errors the user must fix (unknown generation, bad --llm spec: the message says
// which) and for store failures (what was written stays consistent; the run can be resumed).
SearchOutcome drive_search(agents::RunStore& runs, tpu::HostPool& hosts, knowledge::Store* cache,
                           const std::string& run_id, const std::string& baseline_code,
                           SearchSetup setup, const agents::GraphSearch::ProgressSink& on_progress,
                           const std::function<bool()>& cancelled);

// Scores the task's reference (XLA) once for a run and keeps it in the run's params ("xla":
// score_s, time_kind, roofline_s): what "vs XLA" and the fraction of the roofline are computed
// from. Nothing when the run already has it.
void record_xla_baseline(agents::RunStore& runs, const std::string& run_id,
                         agents::CandidateEvaluator& evaluator,
                         const std::function<bool()>& cancelled);

// An automatic autotune phase (SearchParams::kAutotuneAutomatic) becomes a number once, from
// the hosts' platform, and is written back to the run; returns the run's count.
int resolve_autotune_phase(agents::RunStore& runs, const std::string& run_id,
                           tpu::JobRunner& hosts);

// The extra fields of every evaluate request on these hosts: on a CPU host the score is the
// model's prediction and interpret time ranks nothing, so one timed run keeps the record honest
// without minutes in the interpreter; on a TPU host the chip's roofline ("hardware"), below
// which a measured time is flagged rather than called a speedup.
nlohmann::json evaluate_options_for(tpu::HostPool& hosts, const knowledge::TpuGeneration& target);

}  // namespace mk::service
