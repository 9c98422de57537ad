// What a search needs from whatever judges its candidates: a verdict and a score for a source, the
// same for the task's reference (the root of a search from plain JAX), the compile check alone,
// and the target the scores are for. CandidateEvaluator is the real one (the worker on a host);
// the interface lets the search engine run under tests on a scripted one.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/record_status.h"
#include "knowledge/tpu_generations.h"

namespace mk::agents {

struct Evaluation {
  NodeStatus status = NodeStatus::failed;  // correct | incorrect | failed
  std::string stage;  // for failures: "lowering", "execution", "correctness", "host", "cancelled"
  std::string error;  // what went wrong, with line numbers of the candidate where known
  nlohmann::json locations = nlohmann::json::array();  // the worker's [{line, column, message}]
  nlohmann::json metrics = nlohmann::json::object();
  std::optional<double> score_s;  // lower is better
  std::string time_kind;          // "device" | "predicted" | "" (no score)
  double host_seconds = 0;
  bool cache_hit = false;
  std::string host;  // the host that ran the evaluation ("" for a cache hit or no host)
};

// One configuration's score in an autotune phase.
struct ConfigScore {
  nlohmann::json config;
  double score_s = 0;
  std::string time_kind;  // "device" | "compiled" | "predicted"
};

// One autotune phase over a kernel's space: which configuration scores best, on the search's own
// score (device time, else the TPU compiler's or the model's prediction for that configuration).
struct TuningOutcome {
  std::string error;                // "" when the configurations were tried
  nlohmann::json best_config;       // null when none was correct
  std::optional<double> best_s;     // its score, lower is better
  std::string time_kind;            // of best_s: "device" | "compiled" | "predicted"
  int configs = 0;                  // configurations in the space
  int correct = 0;                  // of those, correct at the task's shapes
  int evaluated = 0;                // run by the worker this time
  int cache_hits = 0;               // answered from the tuning cache
  std::vector<ConfigScore> scores;  // every correct, scored configuration
  // Ranked by the TPU compiler below the best: compiled and scored, never run (the worker checks
  // the best-ranked configurations only, until one is correct).
  int unchecked = 0;
  // The worker's ranking basis ({"basis": "tpu_compiler" | "run", ...}); null when all cached.
  nlohmann::json ranking;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // May be called from several threads at once (the search evaluates children concurrently).
  // A cancelled evaluation returns stage "cancelled": the search leaves that node pending.
  virtual Evaluation evaluate(const std::string& source,
                              const std::function<bool()>& cancelled) = 0;
  virtual Evaluation evaluate_reference(const std::function<bool()>& cancelled) = 0;
  // "" when the source lowers for the target, else the error with its line.
  virtual std::string lowering_error(const std::string& source,
                                     const std::function<bool()>& cancelled) = 0;
  // What the debugger gets for a candidate: "" when it lowers and is correct, else the failure
  // in words (a lowering or compile error with its line, or the worker's correctness report:
  // which outputs are wrong, where, the pattern, the errors against the tolerance, the seed and
  // shapes). By default only the compile check.
  virtual std::string debug_error(const std::string& source,
                                  const std::function<bool()>& cancelled) {
    return lowering_error(source, cancelled);
  }
  virtual const knowledge::TpuGeneration& target() const = 0;
  // The device profile of a correct, device-timed kernel (the worker's `profile` reply: the
  // trace's per-kernel times and Pallas share), asked for each kernel that improves the best;
  // null where there is none to take (no device, a failed profile).
  virtual nlohmann::json device_profile(const std::string& source,
                                        const std::function<bool()>& cancelled) {
    (void)source;
    (void)cancelled;
    return nullptr;
  }
  // The autotune phase: every configuration of `space` ({"NAME": [values...]}) of the source,
  // checked at the task's shapes and scored; error "this evaluator does not tune" by default.
  virtual TuningOutcome autotune(const std::string& source, const nlohmann::json& space,
                                 const std::function<bool()>& cancelled) {
    (void)source;
    (void)space;
    (void)cancelled;
    TuningOutcome none;
    none.error = "this evaluator does not tune";
    return none;
  }
};

}  // namespace mk::agents
