// How a search scores a correct candidate on a GPU host (CandidateEvaluator over a scripted
// JobRunner that answers lower and evaluate as a GPU worker would): a kernel measured on the GPU
// is scored by its device time; a kernel the GPU worker interpreted (a TPU kernel there) is
// correct but unscored, never given a TPU prediction to rank against measured kernels.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "agents/orchestration/candidate_evaluator.h"
#include "knowledge/tpu_generations.h"
#include "tests/service/predictable_pallas_call.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::agents {
namespace {

using nlohmann::json;

class GpuWorker : public tpu::JobRunner {
 public:
  GpuWorker(json facts, json evaluation) : facts_(std::move(facts)), eval_(std::move(evaluation)) {}
  tpu::WorkerReply run(tpu::Lane, json request, const std::function<bool()>&,
                       std::optional<std::chrono::milliseconds>, const ProgressFn&,
                       std::string*) override {
    tpu::WorkerReply r;
    r.status = tpu::WorkerReply::Status::Ok;
    if (request.value("op", "") == "lower")
      r.body = {{"ok", true}, {"lowered", true}, {"pallas_calls", {facts_}}};
    else
      r.body = eval_;
    return r;
  }
  tpu::WorkerReply hello() override {
    tpu::WorkerReply r;
    r.status = tpu::WorkerReply::Status::Ok;
    r.body = {{"ok", true}, {"platform", "gpu"}};
    return r;
  }
  std::string fingerprint() override { return "gpu/NVIDIA H200/jax-0"; }
  std::string name() const override { return "local"; }
  void shutdown() override {}

 private:
  json facts_, eval_;
};

Evaluation evaluate_on(GpuWorker& worker) {
  tpu::KernelJobs jobs(worker, nullptr);
  EvaluationSetup setup;
  setup.file = "/tmp/k.py";
  setup.task = {{"form", "infile"}, {"path", "/tmp/k.py"}};
  setup.use_cache = false;
  CandidateEvaluator evaluator(jobs, setup, *knowledge::find_tpu_generation("v5e"));
  return evaluator.evaluate("def f(x):\n    return x\n", [] { return false; });
}

TEST(GpuHostScoring, AKernelMeasuredOnTheGpuIsScoredByItsDeviceTime) {
  GpuWorker worker(predictable_pallas_call("triton"),
                   {{"ok", true},
                    {"correct", true},
                    {"time_kind", "device"},
                    {"run_mode", {{"mode", "device"}, {"platform", "gpu"}}},
                    {"timing",
                     {{"candidate", {{"median_s", 2e-3}, {"device", {{"median_s", 1.5e-3}}}}},
                      {"reference", {{"median_s", 3e-3}}}}}});
  const Evaluation e = evaluate_on(worker);
  EXPECT_EQ(e.status, NodeStatus::correct);
  ASSERT_TRUE(e.score_s.has_value());
  EXPECT_DOUBLE_EQ(*e.score_s, 1.5e-3);
  EXPECT_EQ(e.time_kind, "device");
}

TEST(GpuHostScoring, AKernelInterpretedOnTheGpuHostIsCorrectButUnscored) {
  const std::string note = "a TPU kernel on a GPU host runs in the Pallas interpreter";
  GpuWorker worker(
      predictable_pallas_call("tpu"),
      {{"ok", true},
       {"correct", true},
       {"time_kind", "interpret"},
       {"run_mode",
        {{"mode", "interpret"}, {"interpret_kind", "tpu"}, {"platform", "gpu"}, {"note", note}}},
       {"timing", {{"candidate", {{"median_s", 0.5}}}, {"reference", {{"median_s", 3e-3}}}}}});
  const Evaluation e = evaluate_on(worker);
  EXPECT_EQ(e.status, NodeStatus::correct);
  EXPECT_FALSE(e.score_s.has_value());
  EXPECT_TRUE(e.time_kind.empty());
  EXPECT_EQ(e.metrics.value("unscored", ""), note);
}

}  // namespace
}  // namespace mk::agents
