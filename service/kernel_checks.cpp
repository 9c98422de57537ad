#include "service/kernel_checks.h"

#include <algorithm>
#include <cstdio>

#include "source/analysis/vmem.h"
#include "tpu/host/json_fields.h"
#include "tpu/jobs/predictions.h"

namespace mk::service {

using nlohmann::json;
using tpu::field;
using tpu::integer_or;
using tpu::number_or;
using tpu::text_at;

namespace {

std::vector<SourceLocation> locations_of(const tpu::ReplyFault& fault) {
  std::vector<SourceLocation> out;
  for (const tpu::ReplyLocation& l : fault.locations) out.push_back({l.line, l.column, l.message});
  return out;
}

TimingStats stats_of(const tpu::TimedRuns& s) {
  return {s.median_s.value_or(0), s.p10_s.value_or(0), s.p90_s.value_or(0), s.runs.value_or(0)};
}

std::string percent(double share) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

// One entry of tpu::predict_pallas_calls (our own time model's output, not a worker reply).
Prediction prediction_of(const json& p) {
  Prediction out;
  out.kernel = text_at(p, "kernel", "?");
  if (!field(p, "predicted_s").is_number()) {
    out.unavailable = text_at(p, "unavailable", "no prediction");
    return out;
  }
  out.predicted_s = number_or(p, "predicted_s");
  out.compute_s = number_or(p, "compute_s");
  out.memory_s = number_or(p, "memory_s");
  out.overhead_s = number_or(p, "overhead_s");
  out.arithmetic_intensity = number_or(p, "arithmetic_intensity");
  out.ridge_intensity = number_or(p, "ridge_intensity");
  out.label = text_at(p, "label");
  out.bound = text_at(p, "bound");
  return out;
}

// The reply's failure or error: the kernel's own fault, with the lines the worker names.
void read_fault(const tpu::ReplyFault& fault, KernelCheck& out) {
  out.error_kind = fault.kind;
  out.error_message = fault.message;
  out.locations = locations_of(fault);
}

bool host_failed(const tpu::WorkerReply& reply) {
  return !reply.ok() && reply.status != tpu::WorkerReply::Status::Failed;
}

void read_test(const tpu::JobResult& r, KernelCheck& out) {
  Finding& s = out.summary;
  s.code = "MK200";
  s.source = "maxkernel (test)";
  const std::string& host = out.host;
  if (host_failed(r.reply)) {
    s.severity = out.verdict == Verdict::Cancelled ? Severity::Information : Severity::Warning;
    s.message = "Test did not run on " + host + ": " + out.status + ": " + r.reply.message;
    return;
  }
  const tpu::EvaluateReply b = tpu::read_evaluate_reply(r.reply.body);
  if (!b.ok) {
    out.verdict = Verdict::Failed;
    read_fault(b.error, out);
    const std::string kind = out.error_kind.empty() ? "error" : out.error_kind;
    s.severity = Severity::Error;
    s.message = "Test could not run (" + kind + "): " + out.error_message;
    s.related = out.locations;
    out.hint = " test: " + kind;
    return;
  }
  out.seeds = b.seeds;
  if (b.candidate) {
    TestTiming t;
    t.time_kind = !b.timing_kind.empty() ? b.timing_kind : !b.time_kind.empty() ? b.time_kind : "?";
    t.candidate = stats_of(*b.candidate);
    if (b.reference) t.reference = stats_of(*b.reference);
    out.timing = t;
  }
  out.speedup = b.speedup;
  const std::string cached = r.from_cache ? " (cached)" : "";
  if (!b.correct) {
    out.verdict = Verdict::Wrong;
    read_fault(b.failure, out);
    s.severity = Severity::Error;
    s.message = "Test failed on " + host + cached + " (" +
                (out.error_kind.empty() ? "wrong" : out.error_kind) + "): " + out.error_message;
    s.related = out.locations;
    out.hint = " wrong (" + (out.error_kind.empty() ? "?" : out.error_kind) + ")";
    return;
  }
  out.verdict = Verdict::Passed;
  s.severity = Severity::Information;
  s.message = "Test passed on " + host + cached + ": " + std::to_string(out.seeds.size()) +
              " fresh input sets, both run orders";
  if (!out.timing) return;
  const TestTiming& t = *out.timing;
  const std::string cand = analysis::format_seconds(t.candidate.median_s);
  s.message += "; candidate " + cand + " median (p10 " +
               analysis::format_seconds(t.candidate.p10_s) + ", p90 " +
               analysis::format_seconds(t.candidate.p90_s) + ")";
  if (t.reference) s.message += ", reference " + analysis::format_seconds(t.reference->median_s);
  if (t.time_kind == "interpret") {
    s.message +=
        " [interpret time on the CPU: correctness is real, the time is not a kernel speedup]";
    out.hint = " " + cand + " interpret · " + host;
  } else if (out.speedup) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", *out.speedup);
    s.message += std::string("; ") + buf + " vs the reference";
    out.hint =
        " " + cand + " · " + buf + " vs XLA · " + (b.device_kind.empty() ? host : b.device_kind);
  } else {
    out.hint = " " + cand + " · " + host;
  }
}

void read_profile(const tpu::JobResult& r, KernelCheck& out) {
  const tpu::ProfileReply b = tpu::read_profile_reply(r.reply.body);
  Finding& s = out.summary;
  s.code = "MK201";
  s.source = "maxkernel (profile)";
  if (!r.reply.ok()) {
    if (!host_failed(r.reply)) {
      out.verdict = Verdict::Failed;
      read_fault(b.error, out);
    }
    s.severity = Severity::Warning;
    s.message = "Profile did not run on " + out.host + ": " +
                (r.reply.message.empty() ? out.error_message : r.reply.message);
    return;
  }
  out.verdict = Verdict::Passed;
  out.measured = b.measured;
  out.pallas_share = b.pallas_share;
  out.pallas_time_s = b.pallas_time_us * 1e-6;
  const std::string share = percent(out.pallas_share);
  s.severity = Severity::Information;
  s.message = "Profile on " + out.host + " (" + (out.measured.empty() ? "?" : out.measured) +
              " events): " + share + " of the time in Pallas kernels (" +
              analysis::format_seconds(out.pallas_time_s) + ")";
  if (out.measured == "host") s.message += " [CPU interpret mode: host time, not device time]";
  out.hint = " profile: " + share + " in Pallas";
}

void read_lower(const tpu::JobResult& r, KernelCheck& out, const knowledge::TpuGeneration* target) {
  Finding& s = out.summary;
  s.code = "MK100";
  s.source = "maxkernel (lower)";
  if (host_failed(r.reply)) {
    s.severity = Severity::Warning;
    s.message = "Lowering did not run on " + out.host + ": " + out.status + ": " + r.reply.message;
    return;
  }
  const tpu::LowerReply b = tpu::read_lower_reply(r.reply.body);
  if (b.lists_calls) {
    out.lists_calls = true;
    out.lowered = b.calls;
    if (target) {
      out.predicted = tpu::predict_pallas_calls(b.pallas_calls, *target, b.cost);
      for (const json& p : out.predicted) out.predictions.push_back(prediction_of(p));
    }
  }
  if (!b.ok) {
    out.verdict = Verdict::Failed;
    read_fault(b.error, out);
    s.severity = Severity::Error;
    s.message = out.error_kind == "compile" && b.error.compiled_by
                    ? "the TPU compiler refused it: " + out.error_message
                    : "lowering for TPU failed (" +
                          (out.error_kind.empty() ? "error" : out.error_kind) +
                          "): " + out.error_message;
    if (!out.locations.empty()) {
      // The deepest frame in the user's file comes first: the error goes on that line.
      Finding f = s;
      f.line = std::max(1, out.locations.front().line) - 1;
      out.line_findings.push_back(std::move(f));
    }
    return;
  }
  out.verdict = Verdict::Passed;
  out.lowered_for = b.lowered_for.empty() ? "?" : b.lowered_for;
  out.num_pallas_calls = b.num_pallas_calls;
  if (!b.cost.is_null()) out.cost = b.cost.dump();
  s.severity = Severity::Information;
  s.message = "lowered for " + out.lowered_for + ": " + std::to_string(out.num_pallas_calls) +
              " pallas_call(s)";
}

}  // namespace

const char* to_string(KernelOp op) {
  switch (op) {
    case KernelOp::Lower:
      return "lower";
    case KernelOp::Test:
      return "test";
    case KernelOp::Profile:
      return "profile";
  }
  return "?";
}

KernelCheck read_kernel_check(KernelOp op, const tpu::JobResult& result, const std::string& host,
                              const knowledge::TpuGeneration* target) {
  KernelCheck out;
  out.op = op;
  out.host = result.host.empty() ? host : result.host;
  out.from_cache = result.from_cache;
  out.status = tpu::to_string(result.reply.status);
  out.message = result.reply.message;
  out.reply_body = result.reply.body;
  if (host_failed(result.reply)) {
    out.verdict = result.reply.status == tpu::WorkerReply::Status::Cancelled ? Verdict::Cancelled
                                                                             : Verdict::NotRun;
    out.stderr_tail = result.reply.stderr_tail;
  }
  switch (op) {
    case KernelOp::Test:
      read_test(result, out);
      break;
    case KernelOp::Profile:
      read_profile(result, out);
      break;
    case KernelOp::Lower:
      read_lower(result, out, target);
      break;
  }
  return out;
}

KernelCheck run_kernel_check(KernelOp op, tpu::JobRunner& hosts, knowledge::Store* store,
                             const tpu::KernelRequest& request, const KernelCheckOptions& options) {
  tpu::KernelJobs jobs(hosts, store);
  tpu::KernelJobs::Progress progress;
  if (options.on_progress) {
    progress = [report = options.on_progress](const json& event) {
      report(text_at(event, "stage", text_at(event, "status")));
    };
  }
  tpu::JobResult result;
  switch (op) {
    case KernelOp::Lower:
      result = jobs.lower(request, options.cancelled);
      break;
    case KernelOp::Test:
      result = jobs.test(request, options.use_cache, options.cancelled, progress);
      break;
    case KernelOp::Profile:
      result = jobs.profile(request, options.cancelled, progress);
      break;
  }
  KernelCheck check = read_kernel_check(op, result, hosts.name(), options.target);
  if (op == KernelOp::Profile && check.verdict == Verdict::Passed && options.target) {
    // The diagnosis needs the exact facts at the task's full shapes: one lowering for TPU.
    if (options.on_progress) options.on_progress("diagnosing");
    tpu::KernelRequest lower = request;
    lower.options["target"] = "tpu";
    lower.options.erase("shrink");
    const tpu::JobResult lowered = jobs.lower(lower, options.cancelled);
    if (lowered.reply.ok())
      check.diagnosis = diagnose_profile(lowered.reply.body, result.reply.body, *options.target);
  }
  return check;
}

Prediction predict_call(const LoweredCall& call, const knowledge::TpuGeneration& target) {
  const json predictions = tpu::predict_pallas_calls(json::array({call.facts}), target);
  if (predictions.empty()) {
    Prediction none;
    none.kernel = call.kernel;
    none.unavailable = "no prediction";
    return none;
  }
  return prediction_of(predictions[0]);
}

}  // namespace mk::service
