// Lower, Test and Profile of one kernel on a host, written once for the CLI and the language
// server: the request goes to the worker through KernelJobs, and its reply comes back as plain
// structs (a verdict, the one-line summary the editor shows, findings on lines of the file, the
// facts of each lowered pallas_call). Only this file's .cpp reads the worker's reply bodies for
// these three operations; nothing here knows LSP.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "knowledge/store.h"
#include "knowledge/tpu_generations.h"
#include "service/finding.h"
#include "service/kernel_diagnosis.h"
#include "tpu/host/job_runner.h"
#include "tpu/jobs/kernel_jobs.h"
#include "tpu/jobs/worker_replies.h"

namespace mk::service {

enum class KernelOp { Lower, Test, Profile };
const char* to_string(KernelOp op);  // "lower", "test", "profile"

enum class Verdict {
  Passed,     // lowered / correct / profiled
  Wrong,      // test: it ran and its result is wrong (or its work is done outside the kernel)
  Failed,     // the kernel failed before a verdict: a lowering error, refused, an exception
  NotRun,     // the host failed: unreachable, crashed, timed out, garbage
  Cancelled,  // stopped on request
};

struct TimingStats {
  double median_s = 0, p10_s = 0, p90_s = 0;
  int64_t runs = 0;
};

struct TestTiming {
  std::string time_kind;  // "device", "interpret", ...
  TimingStats candidate;
  std::optional<TimingStats> reference;
};

// One pallas_call as lowering saw it (exact, from the compiler), and its operands.
using LoweredOperand = tpu::LoweredOperand;
using LoweredCall = tpu::LoweredCall;

// The time model's prediction for one lowered pallas_call.
struct Prediction {
  std::string kernel;
  std::string unavailable;  // why there is none ("" when there is one)
  double predicted_s = 0, compute_s = 0, memory_s = 0, overhead_s = 0;
  double arithmetic_intensity = 0, ridge_intensity = 0;
  std::string label, bound;
};

struct KernelCheck {
  KernelOp op = KernelOp::Test;
  Verdict verdict = Verdict::NotRun;
  std::string host;  // the host that ran it (of a pool, the one chosen; a cache hit: the pool)
  bool from_cache = false;
  std::string status;       // the worker reply's status: "ok", "failed", "timed_out", ...
  std::string message;      // what went wrong on the host (NotRun / Cancelled), else the reply's
  std::string stderr_tail;  // the worker's last stderr lines, when the host failed

  // The verdict as one finding on the kernel (MK200 test, MK201 profile); its message is the
  // summary line. Its span is the caller's to set (the kernel's pallas_call).
  Finding summary;
  std::string hint;  // a short inlay label ("" for none)
  // Findings on the file's own lines (lower: the lowering error on the line it names).
  std::vector<Finding> line_findings;

  // Failed: the error; Wrong: the failure. Locations are the lines the worker names.
  std::string error_kind, error_message;
  std::vector<SourceLocation> locations;

  // test
  std::vector<std::string> seeds;  // as the worker wrote them
  std::optional<TestTiming> timing;
  std::optional<double> speedup;
  // lower
  std::string lowered_for;
  int num_pallas_calls = 0;
  bool lists_calls = false;  // the reply listed its pallas_calls (even none, or on an error)
  std::vector<LoweredCall> lowered;
  std::string cost;                     // the program's XLA cost as JSON text ("" when none)
  std::vector<Prediction> predictions;  // for KernelCheckOptions::target
  // profile
  std::string measured;  // "device" or "host"
  double pallas_share = 0, pallas_time_s = 0;
  // What limits the kernel: a profile that passed with KernelCheckOptions::target set also
  // lowers the kernel for TPU at the task's full shapes (its traffic and the model's split).
  std::optional<KernelDiagnosis> diagnosis;

  // The worker's reply body and the predictions, unread, for writers that pass them on whole.
  nlohmann::json reply_body;
  nlohmann::json predicted;
};

struct KernelCheckOptions {
  bool use_cache = true;                             // test: serve a cached verdict
  const knowledge::TpuGeneration* target = nullptr;  // lower: predict; profile: diagnose for it
  std::function<bool()> cancelled;                   // polled by the worker's job
  std::function<void(const std::string& stage)> on_progress;  // the worker's stage names
};

// Runs `op` on `hosts` (a KernelHost or a HostPool); `store` (may be null) caches evaluations.
KernelCheck run_kernel_check(KernelOp op, tpu::JobRunner& hosts, knowledge::Store* store,
                             const tpu::KernelRequest& request, const KernelCheckOptions& options);

// The reply of a finished job as a KernelCheck: what run_kernel_check returns, from a recorded
// reply (no worker needed). `host` names the runner for a reply that names no host.
KernelCheck read_kernel_check(KernelOp op, const tpu::JobResult& result, const std::string& host,
                              const knowledge::TpuGeneration* target = nullptr);

// The time model's prediction for one lowered call on `target`.
Prediction predict_call(const LoweredCall& call, const knowledge::TpuGeneration& target);

}  // namespace mk::service
