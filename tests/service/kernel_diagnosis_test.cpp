// A Profile run's diagnosis on a recorded worker reply (the lowering of
// tests/optimize/kernels/matmul_refetch.py, whose `b` block ignores the row axis): the bound and
// the re-fetched operand, which time the roofline fraction compares (the device's, only when it
// was measured at the task's shapes; otherwise the labelled prediction), a search node's recorded
// diagnosis, and run_kernel_check lowering for the diagnosis only after a profile that passed.
#include "service/kernel_diagnosis.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "service/kernel_checks.h"

namespace mk::service {
namespace {

using nlohmann::json;

json kd_recorded_lowering() {
  std::ifstream in(std::filesystem::path(MK_SOURCE_DIR) /
                   "tests/service/replies/lower_matmul_refetch.json");
  return json::parse(in);
}

json kd_profile(const std::string& measured, const std::string& instance = "full") {
  return {{"ok", true},
          {"instance", {{"kind", instance}}},
          {"summary",
           {{"measured", measured},
            {"op_time_per_run_us", 200.0},
            {"pallas_share", 0.9},
            {"pallas_time_us", 540.0}}}};
}

const knowledge::TpuGeneration& kd_v5e() {
  return *knowledge::find_tpu_generation("v5e");
}

TEST(ProfileDiagnosis, TheRecordedMatmulIsHbmBoundOnTheOperandItReFetches) {
  const auto d = diagnose_profile(kd_recorded_lowering(), kd_profile("host"), kd_v5e());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->diagnosis.bound, "HBM");
  ASSERT_FALSE(d->diagnosis.refetches.empty());
  EXPECT_EQ(d->diagnosis.refetches[0].operand, "args[1]");
  EXPECT_EQ(d->diagnosis.refetches[0].along_axes, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(d->diagnosis.refetches[0].ratio, 8.0);
  EXPECT_TRUE(d->label.starts_with("HBM-bound \u00b7 ")) << d->label;
  EXPECT_TRUE(d->label.ends_with("% of roofline")) << d->label;
  bool named = false;
  for (const std::string& line : d->lines)
    named = named || line.starts_with("re-fetched: args[1] of _matmul 8x along grid axis 0");
  EXPECT_TRUE(named);
  // Host (interpret) time is not compared with a roofline: the model's prediction is.
  EXPECT_EQ(d->score_label, "predicted (model, v5e)");
  ASSERT_TRUE(d->score_s && d->diagnosis.roofline_s && d->diagnosis.roofline_fraction);
  EXPECT_NE(*d->score_s, 200e-6);
  EXPECT_NEAR(*d->diagnosis.roofline_fraction, *d->diagnosis.roofline_s / *d->score_s, 1e-12);
  EXPECT_FALSE(d->diagnosis.pallas_share);  // a host trace's share says nothing of the device
}

TEST(ProfileDiagnosis, OnlyADeviceTraceAtTheTasksShapesIsTheMeasuredTime) {
  const auto device = diagnose_profile(kd_recorded_lowering(), kd_profile("device"), kd_v5e());
  ASSERT_TRUE(device && device->score_s);
  EXPECT_EQ(device->score_label, "measured (device)");
  EXPECT_DOUBLE_EQ(*device->score_s, 200e-6);
  EXPECT_NEAR(*device->diagnosis.roofline_fraction, *device->diagnosis.roofline_s / 200e-6, 1e-12);
  EXPECT_DOUBLE_EQ(*device->diagnosis.pallas_share, 0.9);
  // Profiled on a shrunk instance: its time is not the task's; the prediction stands in.
  const auto shrunk =
      diagnose_profile(kd_recorded_lowering(), kd_profile("device", "shrunk"), kd_v5e());
  ASSERT_TRUE(shrunk);
  EXPECT_EQ(shrunk->score_label, "predicted (model, v5e)");
}

TEST(ProfileDiagnosis, NoPallasCallNoDiagnosis) {
  json lowering = kd_recorded_lowering();
  lowering["pallas_calls"] = json::array();
  EXPECT_FALSE(diagnose_profile(lowering, kd_profile("host"), kd_v5e()));
  EXPECT_FALSE(diagnose_profile(json(), kd_profile("host"), kd_v5e()));
}

TEST(ProfileDiagnosis, ASearchNodeShowsTheDiagnosisItRecorded) {
  const auto profiled = diagnose_profile(kd_recorded_lowering(), kd_profile("host"), kd_v5e());
  ASSERT_TRUE(profiled);
  agents::NodeRecord node;
  node.metrics.bottleneck = profiled->diagnosis;
  node.score_s = 1e-4;
  node.time_kind = "predicted";
  const auto shown = node_diagnosis(node, kd_v5e());
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->label, profiled->label);
  EXPECT_EQ(shown->lines, profiled->lines);
  EXPECT_EQ(shown->score_label, "predicted (model, v5e)");
  node.metrics = agents::NodeMetrics::from_json(json{{"correct", false}});
  EXPECT_FALSE(node_diagnosis(node, kd_v5e()));
}

// Answers each op with its recorded reply and keeps the requests.
class ByOpRunner : public tpu::JobRunner {
 public:
  tpu::WorkerReply run(tpu::Lane, json request, const std::function<bool()>&,
                       std::optional<std::chrono::milliseconds>, const ProgressFn&,
                       std::string* ran_on) override {
    requests.push_back(request);
    if (ran_on) *ran_on = "local";
    tpu::WorkerReply r;
    const std::string op = request.value("op", std::string());
    r.status = op == "profile" ? profile_status : tpu::WorkerReply::Status::Ok;
    r.body = op == "profile" ? kd_profile("host") : kd_recorded_lowering();
    return r;
  }
  tpu::WorkerReply hello() override { return {}; }
  std::string fingerprint() override { return "unreachable"; }
  std::string name() const override { return "local"; }
  void shutdown() override {}

  std::vector<json> requests;
  tpu::WorkerReply::Status profile_status = tpu::WorkerReply::Status::Ok;
};

tpu::KernelRequest kd_request() {
  tpu::KernelRequest request;
  request.file = "/tmp/matmul_refetch.py";
  request.source = "x = 1\n";
  request.task = {{"form", "infile"}, {"path", "/tmp/matmul_refetch.py"}};
  request.options["shrink"] = 8;
  return request;
}

TEST(ProfileDiagnosis, AProfileThatPassedIsLoweredAtFullShapesForItsDiagnosis) {
  ByOpRunner runner;
  KernelCheckOptions options;
  options.target = &kd_v5e();
  std::vector<std::string> stages;
  options.on_progress = [&](const std::string& stage) { stages.push_back(stage); };
  const KernelCheck c = run_kernel_check(KernelOp::Profile, runner, nullptr, kd_request(), options);
  ASSERT_EQ(runner.requests.size(), 2u);
  EXPECT_EQ(runner.requests[0].value("op", std::string()), "profile");
  EXPECT_EQ(runner.requests[1].value("op", std::string()), "lower");
  EXPECT_EQ(runner.requests[1].value("target", std::string()), "tpu");
  EXPECT_FALSE(runner.requests[1].contains("shrink"));
  EXPECT_EQ(stages, std::vector<std::string>{"diagnosing"});
  ASSERT_TRUE(c.diagnosis);
  EXPECT_EQ(c.diagnosis->diagnosis.bound, "HBM");
  EXPECT_EQ(c.verdict, Verdict::Passed);
}

TEST(ProfileDiagnosis, NoTargetOrAFailedProfileAsksForNoLowering) {
  ByOpRunner without_target;
  const KernelCheck plain =
      run_kernel_check(KernelOp::Profile, without_target, nullptr, kd_request(), {});
  EXPECT_EQ(without_target.requests.size(), 1u);
  EXPECT_FALSE(plain.diagnosis);
  ByOpRunner failing;
  failing.profile_status = tpu::WorkerReply::Status::Crashed;
  KernelCheckOptions options;
  options.target = &kd_v5e();
  const KernelCheck failed =
      run_kernel_check(KernelOp::Profile, failing, nullptr, kd_request(), options);
  EXPECT_EQ(failing.requests.size(), 1u);
  EXPECT_FALSE(failed.diagnosis);
  EXPECT_EQ(failed.verdict, Verdict::NotRun);
}

}  // namespace
}  // namespace mk::service
