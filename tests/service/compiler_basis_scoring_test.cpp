// How a search scores a correct candidate on a CPU host when the TPU compiler gives an estimate
// for one program and not the other (CandidateEvaluator over a scripted JobRunner answering
// reference, lower and evaluate as a CPU worker with libtpu would): the compile's record is kept
// on the node whatever its status, and a kernel the compiler could not estimate while XLA's
// program was estimated is correct but says why it has no speedup vs XLA.
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

json compiled(double seconds) {
  return {{"status", "compiled"}, {"predicted_s", seconds}, {"cycles", 1500}};
}

json too_large() {
  return {{"status", "too_large"},
          {"reason", "too large to estimate: over the time limit (900 s)"}};
}

class CpuWorker : public tpu::JobRunner {
 public:
  CpuWorker(json reference_compile, json candidate_compile)
      : reference_(std::move(reference_compile)), candidate_(std::move(candidate_compile)) {}
  tpu::WorkerReply run(tpu::Lane, json request, const std::function<bool()>&,
                       std::optional<std::chrono::milliseconds>, const ProgressFn&,
                       std::string*) override {
    tpu::WorkerReply r;
    r.status = tpu::WorkerReply::Status::Ok;
    const std::string op = request.value("op", "");
    if (op == "reference")
      r.body = {{"ok", true},
                {"platform", "cpu"},
                {"time_kind", "none"},
                {"timing", nullptr},
                {"cost", {{"flops", 1.0e9}, {"min_bytes", 1.0e8}}},
                {"tpu_compile", reference_}};
    else if (op == "lower")
      r.body = {{"ok", true},
                {"lowered", true},
                {"pallas_calls", {predictable_pallas_call("tpu")}},
                {"tpu_compile", {{"candidate", candidate_}, {"reference", reference_}}}};
    else
      r.body = {{"ok", true},
                {"correct", true},
                {"platform", "cpu"},
                {"time_kind", "interpret"},
                {"run_mode", {{"mode", "interpret"}, {"platform", "cpu"}}},
                {"timing", {{"candidate", {{"median_s", 0.5}}}}}};
    return r;
  }
  tpu::WorkerReply hello() override {
    tpu::WorkerReply r;
    r.status = tpu::WorkerReply::Status::Ok;
    r.body = {{"ok", true}, {"platform", "cpu"}};
    return r;
  }
  std::string fingerprint() override { return "cpu/jax-0"; }
  std::string name() const override { return "local"; }
  void shutdown() override {}

 private:
  json reference_, candidate_;
};

struct Scored {
  Evaluation reference, candidate;
};

Scored evaluate_both(CpuWorker& worker) {
  tpu::KernelJobs jobs(worker, nullptr);
  EvaluationSetup setup;
  setup.file = "/tmp/k.py";
  setup.task = {{"form", "infile"}, {"path", "/tmp/k.py"}};
  setup.use_cache = false;
  CandidateEvaluator evaluator(jobs, setup, *knowledge::find_tpu_generation("v5e"));
  Scored s;
  s.reference = evaluator.evaluate_reference([] { return false; });
  s.candidate = evaluator.evaluate("def f(x):\n    return x\n", [] { return false; });
  return s;
}

TEST(CompilerBasisScoring, BothProgramsEstimatedAreScoredByTheCompiler) {
  CpuWorker worker(compiled(2e-3), compiled(1e-3));
  const Scored s = evaluate_both(worker);
  EXPECT_EQ(s.reference.time_kind, "compiled");
  EXPECT_EQ(s.candidate.status, NodeStatus::correct);
  EXPECT_EQ(s.candidate.time_kind, "compiled");
  ASSERT_TRUE(s.candidate.score_s.has_value());
  EXPECT_DOUBLE_EQ(*s.candidate.score_s, 1e-3);
  EXPECT_FALSE(s.candidate.metrics.contains("unscored"));
}

TEST(CompilerBasisScoring, AKernelTheCompilerCouldNotEstimateSaysWhyItIsNotComparedWithXla) {
  CpuWorker worker(compiled(2e-3), too_large());
  const Scored s = evaluate_both(worker);
  EXPECT_EQ(s.reference.time_kind, "compiled");
  EXPECT_EQ(s.candidate.status, NodeStatus::correct);
  // Ranked by the model among kernels on that basis, never against XLA's compiled program.
  EXPECT_EQ(s.candidate.time_kind, "predicted");
  const std::string why = s.candidate.metrics.value("unscored", "");
  EXPECT_NE(why.find("not compared with XLA's compiled program"), std::string::npos) << why;
  EXPECT_NE(why.find("over the time limit (900 s)"), std::string::npos) << why;
  EXPECT_EQ(s.candidate.metrics["tpu_compile"]["candidate"]["status"], "too_large");
}

TEST(CompilerBasisScoring, AReferenceTheCompilerCouldNotEstimateKeepsTheReasonAndBothUseTheModel) {
  CpuWorker worker(too_large(), compiled(1e-3));
  const Scored s = evaluate_both(worker);
  EXPECT_EQ(s.reference.time_kind, "predicted");
  EXPECT_EQ(s.reference.metrics["tpu_compile"]["status"], "too_large");
  // The candidate's estimate is not compared with the model's XLA: both go on the model's basis.
  EXPECT_EQ(s.candidate.time_kind, "predicted");
  EXPECT_FALSE(s.candidate.metrics.contains("unscored"));
  // ...but the kernel's own compile record stays on its node (it compiled for the target).
  EXPECT_EQ(s.candidate.metrics["tpu_compile"]["candidate"]["status"], "compiled");
}

TEST(CompilerBasisScoring, AReferenceCompiledWithNoCyclesIsNoEstimate) {
  // libtpu's static profile gave every op of XLA's program 0 cycles: no baseline to divide by.
  json none = compiled(0.0);
  none["cycles"] = 0;
  CpuWorker worker(none, compiled(1e-3));
  const Scored s = evaluate_both(worker);
  EXPECT_EQ(s.reference.time_kind, "predicted");
  ASSERT_TRUE(s.reference.score_s.has_value());
  EXPECT_GT(*s.reference.score_s, 0);
}

TEST(CompilerBasisScoring, XlasCostModelStandingInForAnOpIsNamedInTheBasis) {
  // The static profile gave XLA's convolution fusion 0 cycles and XLA's own estimate stood in:
  // still the compiler's basis, with the op named where the prediction says what it is.
  json stood_in = compiled(2e-3);
  stood_in["cost_model_ops"] = {{"fusion.2", 40254}};
  CpuWorker worker(stood_in, compiled(1e-3));
  const Scored s = evaluate_both(worker);
  EXPECT_EQ(s.reference.time_kind, "compiled");
  const std::string basis = s.reference.metrics["prediction"].value("basis", "");
  EXPECT_NE(basis.find("cost-model estimate for fusion.2"), std::string::npos) << basis;
  EXPECT_EQ(s.candidate.time_kind, "compiled");
  CpuWorker plain(compiled(2e-3), compiled(1e-3));
  const std::string plain_basis =
      evaluate_both(plain).reference.metrics["prediction"].value("basis", "");
  EXPECT_EQ(plain_basis.find("cost-model"), std::string::npos) << plain_basis;
}

TEST(CompilerBasisScoring, AProgramCountedAtItsHbmFloorSaysSoInTheBasis) {
  // The profile gave XLA's program fewer cycles than its inputs and outputs take at HBM
  // bandwidth: it counts at that floor, and the prediction says so.
  json floored = compiled(2e-3);
  floored["hbm_floor"] = {{"cycles", 3000000}, {"profile_cycles", 1000000}, {"io_bytes", 1 << 30}};
  CpuWorker worker(floored, compiled(1e-3));
  const Scored s = evaluate_both(worker);
  EXPECT_EQ(s.reference.time_kind, "compiled");
  const std::string basis = s.reference.metrics["prediction"].value("basis", "");
  EXPECT_NE(basis.find("inputs and outputs moved once at HBM bandwidth"), std::string::npos)
      << basis;
  CpuWorker plain(compiled(2e-3), compiled(1e-3));
  const std::string plain_basis =
      evaluate_both(plain).reference.metrics["prediction"].value("basis", "");
  EXPECT_EQ(plain_basis.find("HBM bandwidth"), std::string::npos) << plain_basis;
}

}  // namespace
}  // namespace mk::agents
