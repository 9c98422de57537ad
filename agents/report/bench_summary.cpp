#include "agents/report/bench_summary.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "agents/report/html.h"
#include "tpu/jobs/worker_replies.h"

namespace mk::report {

using nlohmann::json;

namespace {

std::optional<double> positive(std::optional<double> value) {
  if (!value || !std::isfinite(*value) || *value <= 0) return std::nullopt;
  return value;
}

// Kinds of ok:false errors that still mean the candidate compiled (it failed while running).
bool compiled_despite_error(const std::string& kind) {
  return kind == "runtime";
}

}  // namespace

void apply_evaluation(BenchTaskResult& task, const std::string& reply_body_json) {
  task.evaluated = true;
  const json parsed = json::parse(reply_body_json, nullptr, false);
  if (!parsed.is_object()) {
    task.failure = "the worker's reply is not a JSON object";
    return;
  }
  const tpu::EvaluateReply body = tpu::read_evaluate_reply(parsed);
  if (!body.ok) {
    const std::string& kind = body.error.kind;
    task.compiled = compiled_despite_error(kind);
    task.failure = (kind.empty() ? "error" : kind) + ": " + body.error.message;
    return;
  }
  task.compiled = true;
  task.correct = body.correct;
  task.time_kind = body.time_kind.empty() ? body.timing_kind : body.time_kind;
  if (body.candidate) task.candidate_median_s = positive(body.candidate->median_s);
  if (body.reference) task.reference_median_s = positive(body.reference->median_s);
  // Only device time is a kernel speedup; the worker's own speedup is null otherwise.
  if (task.correct && task.time_kind == "device") {
    task.speedup = positive(body.speedup);
    if (!task.speedup && task.candidate_median_s && task.reference_median_s)
      task.speedup = *task.reference_median_s / *task.candidate_median_s;
  }
  if (!task.correct) {
    const std::string& kind = body.failure.kind;
    task.failure = (kind.empty() ? "incorrect" : kind) + ": " + body.failure.message;
  }
}

BenchSummary summarize_bench(const std::vector<BenchTaskResult>& tasks) {
  BenchSummary summary;
  double log_sum = 0;
  bool every_correct_has_speedup = true;
  for (const auto& task : tasks) {
    if (!task.evaluated) {
      ++summary.skipped;
      continue;
    }
    ++summary.tasks;
    summary.host_seconds += task.host_seconds;
    if (task.from_cache) ++summary.cache_hits;
    if (task.compiled) ++summary.compiled;
    if (!task.correct) continue;
    ++summary.correct;
    if (task.speedup) {
      ++summary.with_speedup;
      log_sum += std::log(*task.speedup);
    } else {
      every_correct_has_speedup = false;
    }
  }
  if (summary.with_speedup > 0) summary.geomean_speedup = std::exp(log_sum / summary.with_speedup);
  if (!every_correct_has_speedup) {
    summary.speedup_note =
        "a speedup needs device time; interpret time on a CPU host is not a kernel speedup";
  }
  for (double p : {0.0, 1.0, 1.5, 2.0}) {
    FastP entry{p, std::nullopt};
    if (summary.tasks > 0) {
      if (p == 0.0) {
        entry.fraction = static_cast<double>(summary.correct) / summary.tasks;
      } else if (every_correct_has_speedup) {
        int fast = 0;
        for (const auto& task : tasks)
          if (task.evaluated && task.correct && task.speedup && *task.speedup > p) ++fast;
        entry.fraction = static_cast<double>(fast) / summary.tasks;
      }
    }
    summary.fast_p.push_back(entry);
  }
  return summary;
}

std::string speedup_cell(const BenchTaskResult& task) {
  if (!task.evaluated) return "n/a (skipped)";
  if (!task.correct) return "n/a (incorrect)";
  if (task.speedup) return format_speedup(*task.speedup);
  return "n/a (" + (task.time_kind.empty() ? std::string("not timed") : task.time_kind) + ")";
}

}  // namespace mk::report
