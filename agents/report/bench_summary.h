// Scoring a JAXBench-format suite: per-task verdicts from the worker's evaluate replies, and the
// suite summary (compile and correctness rates, geometric-mean speedup, fast_p). Speedups count
// only when the worker measured device time; interpret-mode time is never a speedup.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mk::report {

struct BenchTaskResult {
  std::string name;        // the task folder's name
  std::string candidate;   // path of the candidate file ("" when the task has none)
  bool evaluated = false;  // false: skipped (see `failure`)
  bool compiled = false;   // the candidate lowered, compiled and ran to a verdict
  bool correct = false;
  std::string time_kind;          // "device" | "interpret" | "" (not timed)
  std::optional<double> speedup;  // reference / candidate median, device time only
  std::optional<double> candidate_median_s;
  std::optional<double> reference_median_s;
  std::string failure;      // why it is not correct (or skipped), one line
  double host_seconds = 0;  // wall time of the evaluation on this machine
  bool from_cache = false;
};

// Fills compiled / correct / time_kind / speedup / medians / failure from an evaluate reply
// body (the worker's JSON; ok:false bodies carry an error). Every field is treated as optional.
void apply_evaluation(BenchTaskResult& task, const std::string& reply_body_json);

struct FastP {
  double p = 0;
  std::optional<double> fraction;  // nullopt: not measurable (no device speedups)
};

struct BenchSummary {
  int tasks = 0;    // evaluated tasks (the denominators)
  int skipped = 0;  // tasks without a candidate
  int compiled = 0;
  int correct = 0;
  int with_speedup = 0;
  std::optional<double> geomean_speedup;  // over correct tasks with a device speedup
  std::vector<FastP> fast_p;              // p = 0, 1, 1.5, 2
  double host_seconds = 0;
  int cache_hits = 0;
  std::string speedup_note;  // why speedups are n/a, when they are
};

// fast_p = fraction of evaluated tasks that are correct and have speedup > p. Every correct
// kernel has a positive speedup, so fast_0 is the correct fraction even without timing; for
// p > 0 it needs a device speedup for every correct task, else it is n/a.
BenchSummary summarize_bench(const std::vector<BenchTaskResult>& tasks);

// The speedup column: "1.42x", "n/a (interpret)", "n/a (incorrect)", "n/a (skipped)".
std::string speedup_cell(const BenchTaskResult& task);

}  // namespace mk::report
