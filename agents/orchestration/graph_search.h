// Runs a search over kernel variants and records every step in the RunStore: the baseline is the
// root (speedup 1.0): the kernel as written, or for a run that starts from a plain JAX function
// (params "start": "reference") the reference as XLA runs it, each round selects parents
// (selection.h), asks the Expander for children, records them as pending, evaluates them (bounded
// concurrency) and updates the best. A run that was killed resumes from the database: pending nodes
// are evaluated, finished ones never again.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "agents/orchestration/evaluator.h"
#include "agents/orchestration/expander.h"
#include "agents/orchestration/run_store.h"
#include "agents/orchestration/search_params.h"

namespace mk::agents {

struct SearchProgress {
  int round = 0;
  int max_rounds = 0;  // 0 = unbounded
  int evaluations = 0;
  double best_speedup = 1.0;
  std::string score_label;  // "predicted (model, v5e)" / "measured (device)"
  std::string message;      // "node 7 (block_sizes: BLOCK_M 128 -> 256): correct, 1.31x"
};

class GraphSearch {
 public:
  // `run` must already exist in the store (create_run); its params and budget are authoritative.
  // Any Evaluator: CandidateEvaluator in real runs, a scripted one in tests.
  GraphSearch(RunStore& store, Evaluator& evaluator, Expander& expander, std::string run_id);

  using ProgressSink = std::function<void(const SearchProgress&)>;
  // Runs (or resumes) until a stop condition; returns the final run record.
  RunRecord run(const std::string& baseline_code, const ProgressSink& on_progress = {},
                const std::function<bool()>& cancelled = {});

 private:
  class EvaluationQueue;
  // A correct, device-timed kernel that beats the best so far (or starts it): worth a profile.
  bool improves_on_device(const NodeRecord& node, const Evaluation& evaluation) const;
  void evaluate_one(NodeRecord& node, const ProgressSink& on_progress,
                    const std::function<bool()>& cancelled);
  void evaluate_nodes(std::vector<NodeRecord>& pending, const ProgressSink& on_progress,
                      const std::function<bool()>& cancelled);
  void finish_node(NodeRecord& node, const Evaluation& evaluation);
  // The round's autotune phase (params_.autotune_configs): the best kernel not tuned yet, then
  // the child its best configuration makes. Runs once per round, a resumed round included.
  // `llm_cancelled` also bounds the Autotuner's LLM call by the wall-time budget.
  void tune_best(const ProgressSink& on_progress, const std::function<bool()>& cancelled,
                 const std::function<bool()>& llm_cancelled);
  std::optional<std::string> stop_reason(const std::vector<NodeRecord>& nodes, int round,
                                         int rounds_without_gain) const;
  SearchProgress progress(const std::string& message) const;
  double gain_measure() const;  // the figure patience watches

  RunStore& store_;
  Evaluator& evaluator_;
  Expander& expander_;
  RunRecord run_;  // its cost holds the totals, persisted with the run
  SearchParams params_;
  Budget budget_;
  // Round, rounds without gain and the elapsed time of the earlier sessions (this session's time
  // is added when the state is persisted into the run's params).
  SearchState state_;
  std::optional<double> baseline_score_;
  std::string baseline_kind_;    // its time_kind: a node's speedup needs a score of the same kind
  bool reference_root_ = false;  // the root is the task's reference as XLA runs it
  double best_kernel_speedup_ = 0;  // the best non-root node: what "gain" means from a reference
  double best_speedup_ = 1.0;
  double session_start_ = 0;
  std::set<int64_t> exhausted_;
  mutable std::mutex mutex_;  // guards run_ while evaluations run on several threads
};

}  // namespace mk::agents
