// Turns one candidate source into a verdict and a score: lower for the target (the compile
// check), run against the task's frozen reference on fresh inputs, then score it. The score is
// the measured device time where the host has a device, else the TPU time model's prediction
// from the exact lowering facts (labelled "predicted"); interpret time never ranks candidates.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/orchestration/evaluator.h"
#include "agents/orchestration/extra_shapes.h"
#include "knowledge/tpu_generations.h"
#include "tpu/jobs/kernel_jobs.h"
#include "tpu/jobs/worker_replies.h"

namespace mk::agents {

struct EvaluationSetup {
  std::filesystem::path file;         // the kernel file (the task's anchor)
  nlohmann::json task;                // from tpu::locate_task
  std::optional<std::string> kernel;  // entry point override
  bool use_cache = true;
  nlohmann::json options = nlohmann::json::object();  // extra worker request fields (seeds, timing)
  // The run's extra shapes (nullopt: none asked for). Unsettled, the first kernel evaluated (the
  // root) is checked at them without being held to them, and the set keeps those it passes.
  std::optional<ExtraShapes> extra_shapes = std::nullopt;
};

// The worker request for `source` against this setup's task, and the one that lowers it for TPU
// (the compile check: always at the task's full shapes, the task's own only).
tpu::KernelRequest kernel_request(const EvaluationSetup& setup, const std::string& source);
tpu::KernelRequest lowering_request(const EvaluationSetup& setup, const std::string& source);

// The evaluator of real runs. Its default arguments let direct callers omit `cancelled`.
class CandidateEvaluator final : public Evaluator {
 public:
  CandidateEvaluator(tpu::KernelJobs& jobs, EvaluationSetup setup,
                     const knowledge::TpuGeneration& target)
      : jobs_(jobs), setup_(std::move(setup)), target_(target) {
    // The worker compiles lowered candidates and the reference for this generation with the TPU
    // compiler (libtpu) when no TPU is attached; their static cycles then score both.
    setup_.options["generation"] = target.name;
  }

  Evaluation evaluate(const std::string& source,
                      const std::function<bool()>& cancelled = {}) override;
  // The task's reference as XLA runs it, the root of a search that starts from a plain JAX
  // function: measured on a host with a device, else predicted at the roofline of its FLOPs and
  // the bytes any program must move (inputs read and outputs written once): an XLA at its best,
  // so a predicted speedup over it is never flattering.
  Evaluation evaluate_reference(const std::function<bool()>& cancelled = {}) override;
  // Only the compile check: "" when the source lowers for TPU, else the error with its line.
  std::string lowering_error(const std::string& source,
                             const std::function<bool()>& cancelled = {}) override;
  // The whole evaluation (cached, so the search's own evaluation of the same source is a cache
  // hit): an error of the candidate's (lowering, compile, run time) with its locations, or a
  // wrong result with the worker's correctness report;
  // "" otherwise (correct, or a verdict the debugger is not asked about). Only the compile
  // check while the run's extra shapes are not settled yet (the root settles them).
  std::string debug_error(const std::string& source,
                          const std::function<bool()>& cancelled = {}) override;
  const knowledge::TpuGeneration& target() const override { return target_; }
  nlohmann::json device_profile(const std::string& source,
                                const std::function<bool()>& cancelled = {}) override;
  // The worker's autotune op over `space` (cached per configuration), each correct
  // configuration scored as evaluate scores a node: device time, else the TPU compiler's
  // prediction (the worker ranks by it from a compile each, with no run, and checks the best),
  // else the model's.
  TuningOutcome autotune(const std::string& source, const nlohmann::json& space,
                         const std::function<bool()>& cancelled = {}) override;
  // The run's extra shapes as they stand (settled once the root has been evaluated).
  std::optional<ExtraShapes> extra_shapes() const;

 private:
  tpu::KernelJobs& jobs_;
  EvaluationSetup setup_;
  mutable std::mutex shapes_mutex_;  // setup_.extra_shapes settles while others may read it
  const knowledge::TpuGeneration& target_;
  // Whether the XLA root (when the run has one) was scored by the TPU compiler: if it was not
  // (no libtpu, over the bound), candidates are scored by the model too, so speedups compare.
  std::atomic<bool> reference_not_compiled_{false};
  // Whether it was: then a candidate the compiler gave no estimate has no speedup vs XLA.
  std::atomic<bool> reference_compiled_{false};
};

// "predicted (model, v5e)" or "measured (device)": the label a score of this kind carries.
std::string score_label(const std::string& time_kind, const knowledge::TpuGeneration& target);

// The worker error as one readable text: "lowering: <message> (line 12)".
std::string describe_worker_error(const tpu::ReplyFault& error);
std::string describe_worker_error(const nlohmann::json& error);  // a reply's "error" object

// A failed or incorrect evaluation as the debugger reads it: its error, each location the
// worker gave (line and message), and the correctness report (metrics.correctness_report.text).
std::string debug_text(const Evaluation& evaluation);

}  // namespace mk::agents
