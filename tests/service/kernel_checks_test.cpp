// The kernel checks on recorded worker replies: the verdict, the summary line the editor shows
// (byte for byte what the Test / Profile lenses have always said), the inlay label and the
// findings with their lines, for a pass, a mismatch, a refusal, a work verdict and a cancel.
#include "service/kernel_checks.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mk::service {
namespace {

using nlohmann::json;

tpu::JobResult reply(tpu::WorkerReply::Status status, json body, std::string message = "",
                     std::string host = "") {
  tpu::JobResult r;
  r.reply.status = status;
  r.reply.body = std::move(body);
  r.reply.message = std::move(message);
  r.host = std::move(host);
  return r;
}

constexpr auto kOk = tpu::WorkerReply::Status::Ok;
constexpr auto kFailed = tpu::WorkerReply::Status::Failed;

TEST(KernelChecks, PassingTestOnADeviceSaysItsTimesAndSpeedup) {
  const json body = json::parse(R"json({
    "ok": true, "correct": true, "seeds": [11, 12, 13], "time_kind": "device",
    "device_kind": "TPU v5 lite", "speedup": 1.5,
    "timing": {"time_kind": "device",
               "candidate": {"median_s": 0.002, "p10_s": 0.0019, "p90_s": 0.0021, "runs": 20},
               "reference": {"median_s": 0.003, "p10_s": 0.0029, "p90_s": 0.0031, "runs": 20}}})json");
  const KernelCheck c =
      read_kernel_check(KernelOp::Test, reply(kOk, body, "", "tpu-b"), "tpu-a,tpu-b");
  EXPECT_EQ(c.verdict, Verdict::Passed);
  EXPECT_EQ(c.host, "tpu-b");  // the host that ran it, not the pool
  EXPECT_EQ(c.summary.severity, Severity::Information);
  EXPECT_EQ(c.summary.code, "MK200");
  EXPECT_EQ(c.summary.source, "maxkernel (test)");
  EXPECT_EQ(c.summary.message,
            "Test passed on tpu-b: 3 fresh input sets, both run orders; candidate 2 ms median "
            "(p10 1.9 ms, p90 2.1 ms), reference 3 ms; 1.50x vs the reference");
  EXPECT_EQ(c.hint, " 2 ms · 1.50x vs XLA · TPU v5 lite");
  EXPECT_EQ(c.seeds, (std::vector<std::string>{"11", "12", "13"}));
  ASSERT_TRUE(c.timing && c.timing->reference);
  EXPECT_EQ(c.timing->candidate.runs, 20);
  EXPECT_EQ(c.speedup, 1.5);
  EXPECT_TRUE(c.summary.related.empty());
}

TEST(KernelChecks, InterpretTimeIsNeverAMeasuredSpeedup) {
  const json body = json::parse(R"json({
    "ok": true, "correct": true, "seeds": [1, 2], "speedup": 9.0,
    "timing": {"time_kind": "interpret",
               "candidate": {"median_s": 0.5, "p10_s": 0.4, "p90_s": 0.6, "runs": 3}}})json");
  tpu::JobResult r = reply(kOk, body);
  r.from_cache = true;
  const KernelCheck c = read_kernel_check(KernelOp::Test, r, "local");
  EXPECT_EQ(c.summary.message,
            "Test passed on local (cached): 2 fresh input sets, both run orders; candidate 500 "
            "ms median (p10 400 ms, p90 600 ms) [interpret time on the CPU: correctness is "
            "real, the time is not a kernel speedup]");
  EXPECT_EQ(c.hint, " 500 ms interpret · local");
  EXPECT_TRUE(c.from_cache);
}

TEST(KernelChecks, AMismatchIsWrongWithItsSeeds) {
  const json body = json::parse(R"json({
    "ok": true, "correct": false, "seeds": [4, 5, 6], "timing": null, "speedup": null,
    "failure": {"kind": "mismatch", "message": "output 0 differs at [3, 1] (seed 5)"}})json");
  const KernelCheck c = read_kernel_check(KernelOp::Test, reply(kOk, body), "local");
  EXPECT_EQ(c.verdict, Verdict::Wrong);
  EXPECT_EQ(c.summary.severity, Severity::Error);
  EXPECT_EQ(c.summary.message,
            "Test failed on local (mismatch): output 0 differs at [3, 1] (seed 5)");
  EXPECT_EQ(c.hint, " wrong (mismatch)");
  EXPECT_EQ(c.error_kind, "mismatch");
  EXPECT_EQ(c.seeds, (std::vector<std::string>{"4", "5", "6"}));
  EXPECT_FALSE(c.timing);
  EXPECT_FALSE(c.speedup);
  EXPECT_TRUE(c.locations.empty());
}

TEST(KernelChecks, ARefusedCandidateNamesItsLines) {
  const json error = json::parse(R"json({
    "kind": "refused", "rule": "concurrency",
    "message": "thread_start.py:9: the candidate imports `threading` [concurrency]",
    "locations": [{"line": 9, "column": 1, "message": "imports `threading` [concurrency]"}]})json");
  const tpu::JobResult r =
      reply(kFailed, {{"ok", false}, {"error", error}}, error["message"].get<std::string>());
  const KernelCheck test = read_kernel_check(KernelOp::Test, r, "local");
  EXPECT_EQ(test.verdict, Verdict::Failed);
  EXPECT_EQ(test.summary.severity, Severity::Error);
  EXPECT_EQ(test.summary.message,
            "Test could not run (refused): thread_start.py:9: the candidate imports `threading` "
            "[concurrency]");
  EXPECT_EQ(test.hint, " test: refused");
  ASSERT_EQ(test.summary.related.size(), 1u);
  EXPECT_EQ(test.summary.related[0].line, 9);
  EXPECT_EQ(test.summary.related[0].message, "imports `threading` [concurrency]");

  // Lowering the same file puts the refusal on the candidate's own (0-based) line.
  const KernelCheck lower = read_kernel_check(KernelOp::Lower, r, "local");
  EXPECT_EQ(lower.verdict, Verdict::Failed);
  ASSERT_EQ(lower.line_findings.size(), 1u);
  const Finding& f = lower.line_findings[0];
  EXPECT_EQ(f.line, 8);
  EXPECT_FALSE(f.span);
  EXPECT_EQ(f.severity, Severity::Error);
  EXPECT_EQ(f.code, "MK100");
  EXPECT_EQ(f.source, "maxkernel (lower)");
  EXPECT_EQ(f.message,
            "lowering for TPU failed (refused): thread_start.py:9: the candidate imports "
            "`threading` [concurrency]");
}

TEST(KernelChecks, AWorkVerdictKeepsItsLocation) {
  const std::string message =
      "the work is done outside the kernel: XLA ops outside every pallas_call do 100% of the "
      "reference's matmul FLOPs (524,288 of 524,288; the kernels do 0%); at most 50% may run "
      "outside the kernels";
  json body = {{"ok", true}, {"correct", false}, {"seeds", json::array()}, {"timing", nullptr}};
  body["failure"] = {{"kind", "work_outside_kernel"},
                     {"rule", "matmul_flops"},
                     {"message", message},
                     {"locations", {{{"line", 21}, {"column", 1}, {"message", message}}}}};
  const KernelCheck c = read_kernel_check(KernelOp::Test, reply(kOk, body), "local");
  EXPECT_EQ(c.verdict, Verdict::Wrong);
  EXPECT_EQ(c.summary.message, "Test failed on local (work_outside_kernel): " + message);
  EXPECT_EQ(c.hint, " wrong (work_outside_kernel)");
  ASSERT_EQ(c.locations.size(), 1u);
  EXPECT_EQ(c.locations[0].line, 21);
  EXPECT_EQ(c.locations[0].column, 1);
  ASSERT_EQ(c.summary.related.size(), 1u);  // the editor shows the same line
  EXPECT_EQ(c.summary.related[0].line, 21);
}

TEST(KernelChecks, ACancelledProfileDidNotRun) {
  const tpu::JobResult r = reply(tpu::WorkerReply::Status::Cancelled, nullptr, "cancelled");
  const KernelCheck c = read_kernel_check(KernelOp::Profile, r, "local");
  EXPECT_EQ(c.verdict, Verdict::Cancelled);
  EXPECT_EQ(c.status, "cancelled");
  EXPECT_EQ(c.summary.code, "MK201");
  EXPECT_EQ(c.summary.severity, Severity::Warning);
  EXPECT_EQ(c.summary.message, "Profile did not run on local: cancelled");
  EXPECT_TRUE(c.hint.empty());

  // A cancelled test is information, not a warning: the user asked for it.
  const KernelCheck t = read_kernel_check(KernelOp::Test, r, "local");
  EXPECT_EQ(t.verdict, Verdict::Cancelled);
  EXPECT_EQ(t.summary.severity, Severity::Information);
  EXPECT_EQ(t.summary.message, "Test did not run on local: cancelled: cancelled");
}

TEST(KernelChecks, AnUnreachableHostIsNotTheKernelsFault) {
  tpu::JobResult r = reply(tpu::WorkerReply::Status::Unreachable, nullptr, "ssh: no route");
  r.reply.stderr_tail = "ssh: connect to host tpu-a port 22\n";
  const KernelCheck c = read_kernel_check(KernelOp::Test, r, "tpu-a");
  EXPECT_EQ(c.verdict, Verdict::NotRun);
  EXPECT_EQ(c.summary.severity, Severity::Warning);
  EXPECT_EQ(c.summary.message, "Test did not run on tpu-a: unreachable: ssh: no route");
  EXPECT_EQ(c.stderr_tail, "ssh: connect to host tpu-a port 22\n");
}

TEST(KernelChecks, AProfileSaysItsPallasShare) {
  const json body = json::parse(R"json({"ok": true,
    "summary": {"measured": "host", "pallas_share": 0.4235, "pallas_time_us": 1500}})json");
  const KernelCheck c = read_kernel_check(KernelOp::Profile, reply(kOk, body), "local");
  EXPECT_EQ(c.verdict, Verdict::Passed);
  EXPECT_EQ(c.summary.severity, Severity::Information);
  EXPECT_EQ(c.summary.message,
            "Profile on local (host events): 42.4% of the time in Pallas kernels (1.5 ms) [CPU "
            "interpret mode: host time, not device time]");
  EXPECT_EQ(c.hint, " profile: 42.4% in Pallas");
}

TEST(KernelChecks, ALoweringListsEachCallsFacts) {
  const json body = json::parse(R"json({"ok": true, "lowered_for": "tpu", "num_pallas_calls": 1,
    "pallas_calls": [{"kernel": "matmul_kernel", "location": {"line": 14}, "grid": [4, 2],
                      "vmem_bytes_per_step": 196608,
                      "operands": [{"role": "input", "block_shape": [128, 256],
                                    "array_shape": [512, 256], "dtype": "float32"}]}]})json");
  const KernelCheck c = read_kernel_check(KernelOp::Lower, reply(kOk, body), "local");
  EXPECT_EQ(c.verdict, Verdict::Passed);
  EXPECT_TRUE(c.lists_calls);
  EXPECT_TRUE(c.line_findings.empty());
  EXPECT_EQ(c.lowered_for, "tpu");
  ASSERT_EQ(c.lowered.size(), 1u);
  const LoweredCall& call = c.lowered[0];
  EXPECT_EQ(call.kernel, "matmul_kernel");
  EXPECT_EQ(call.line, 14);
  EXPECT_EQ(call.grid, "[4,2]");
  EXPECT_EQ(call.vmem_bytes_per_step, 196608);
  ASSERT_EQ(call.operands.size(), 1u);
  EXPECT_EQ(call.operands[0].block_shape, "[128,256]");
  EXPECT_EQ(call.operands[0].dtype, "float32");
  EXPECT_TRUE(c.cost.empty());
}

// A runner that answers every job with one recorded reply, after one progress event.
class RecordedRunner : public tpu::JobRunner {
 public:
  explicit RecordedRunner(tpu::WorkerReply reply) : reply_(std::move(reply)) {}
  tpu::WorkerReply run(tpu::Lane, json request, const std::function<bool()>& cancelled,
                       std::optional<std::chrono::milliseconds>, const ProgressFn& on_progress,
                       std::string* ran_on) override {
    requests.push_back(request);
    saw_cancel_check = static_cast<bool>(cancelled);
    if (on_progress) on_progress({{"event", "progress"}, {"stage", "compiling"}});
    if (ran_on) *ran_on = "tpu-b";
    return reply_;
  }
  tpu::WorkerReply hello() override { return {}; }
  std::string fingerprint() override { return "unreachable"; }
  std::string name() const override { return "tpu-a,tpu-b"; }
  void shutdown() override {}

  std::vector<json> requests;
  bool saw_cancel_check = false;

 private:
  tpu::WorkerReply reply_;
};

TEST(KernelChecks, RunSendsTheOpAndReportsStagesAndTheHost) {
  tpu::WorkerReply wrong;
  wrong.status = kOk;
  wrong.body = {{"ok", true},
                {"correct", false},
                {"seeds", {7}},
                {"failure", {{"kind", "nan"}, {"message", "output 0 has NaN"}}}};
  RecordedRunner runner(wrong);
  tpu::KernelRequest request;
  request.file = "/tmp/k.py";
  request.source = "x = 1\n";
  request.task = {{"form", "infile"}, {"path", "/tmp/k.py"}};
  std::vector<std::string> stages;
  KernelCheckOptions options;
  options.cancelled = [] { return false; };
  options.on_progress = [&](const std::string& stage) { stages.push_back(stage); };
  const KernelCheck c = run_kernel_check(KernelOp::Test, runner, nullptr, request, options);
  ASSERT_EQ(runner.requests.size(), 1u);
  EXPECT_EQ(runner.requests[0].value("op", std::string()), "evaluate");
  EXPECT_TRUE(runner.saw_cancel_check);
  EXPECT_EQ(stages, std::vector<std::string>{"compiling"});
  EXPECT_EQ(c.host, "tpu-b");
  EXPECT_EQ(c.summary.message, "Test failed on tpu-b (nan): output 0 has NaN");
}

}  // namespace
}  // namespace mk::service
