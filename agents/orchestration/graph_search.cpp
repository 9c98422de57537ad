#include "agents/orchestration/graph_search.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "agents/orchestration/autotune_phase.h"
#include "agents/orchestration/candidate_evaluator.h"  // score_label
#include "agents/orchestration/diagnosis.h"
#include "agents/orchestration/score_kind.h"
#include "agents/orchestration/selection.h"

namespace mk::agents {

namespace {

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_speedup(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", s);
  return buf;
}

// What the LLM expander is told about the way to this node: each ancestor's change and verdict.
std::string lineage_history(const std::vector<NodeRecord>& nodes, const NodeRecord& node) {
  std::map<int64_t, const NodeRecord*> ids;
  for (const NodeRecord& n : nodes) ids[n.id] = &n;
  std::vector<const NodeRecord*> chain;
  for (const NodeRecord* cur = &node; cur;) {
    chain.insert(chain.begin(), cur);
    if (!cur->parent) break;
    auto it = ids.find(*cur->parent);
    cur = it == ids.end() ? nullptr : it->second;
  }
  std::string out;
  for (const NodeRecord* n : chain) {
    out += "- node " + std::to_string(n->id) + " (" + n->strategy + "): " + n->description +
           " -> " + to_string(n->status);
    if (n->speedup) out += ", " + format_speedup(*n->speedup);
    if (!n->error.empty()) out += "; error: " + n->error.substr(0, 400);
    out += "\n";
  }
  return out;
}

}  // namespace

GraphSearch::GraphSearch(RunStore& store, Evaluator& evaluator, Expander& expander,
                         std::string run_id)
    : store_(store), evaluator_(evaluator), expander_(expander) {
  auto run = store_.run(run_id);
  if (!run) throw std::runtime_error("no run '" + run_id + "' in the store");
  run_ = *run;
  params_ = run_.params.search;
  state_ = run_.params.state;
  reference_root_ = run_.params.from_reference;
  budget_ = run_.budget;
}

double GraphSearch::gain_measure() const {
  // From a reference the root is XLA at 1.0: progress is the best kernel improving, even while
  // it is still slower than XLA (else patience would stop a search whose kernels are improving).
  std::lock_guard lock(mutex_);
  return reference_root_ ? best_kernel_speedup_ : best_speedup_;
}

SearchProgress GraphSearch::progress(const std::string& message) const {
  SearchProgress p;
  p.round = state_.round;
  p.max_rounds = budget_.iterations;
  p.evaluations = run_.cost.evaluations;
  p.best_speedup = best_speedup_;
  p.score_label = run_.score_kind;
  p.message = message;
  return p;
}

void GraphSearch::finish_node(NodeRecord& node, const Evaluation& evaluation) {
  node.status = evaluation.status;
  node.error = evaluation.error;
  NodeMetrics metrics = NodeMetrics::from_json(evaluation.metrics);
  // What the node answers was recorded when it was proposed; the evaluation keeps it.
  metrics.answers = node.metrics.answers;
  // What limits it, from its own facts (correct nodes only: a failure has nothing to measure).
  if (evaluation.status == NodeStatus::correct)
    metrics.bottleneck = diagnose(evaluation.metrics, evaluation.score_s, evaluator_.target());
  if (!evaluation.locations.empty()) metrics.facts["locations"] = evaluation.locations;
  if (!evaluation.stage.empty()) metrics.stage = evaluation.stage;
  node.metrics = std::move(metrics);
  node.score_s = evaluation.score_s;
  node.time_kind = evaluation.time_kind;
  node.cost.host_seconds = evaluation.host_seconds;
  node.cost.cache_hit = evaluation.cache_hit;
  node.finished_at = unix_now();
  std::lock_guard lock(mutex_);
  if (node.id == 0) {
    baseline_score_ = node.score_s;
    baseline_kind_ = evaluation.time_kind;
    if (node.status == NodeStatus::correct && node.score_s) node.speedup = 1.0;
    if (!evaluation.time_kind.empty())
      run_.score_kind = score_label(evaluation.time_kind, evaluator_.target());
  } else if (node.status == NodeStatus::correct) {
    // Only scores of one kind compare (the TPU compiler's cycles with the model's roofline do not).
    node.speedup =
        same_kind_speedup(baseline_score_, baseline_kind_, node.score_s, evaluation.time_kind);
  }
  store_.update_node(node);
  run_.cost.add_evaluation(node.cost);
  // The root is the best until a node beats it (as best_node() and a resumed run have it).
  if (node.speedup && (*node.speedup > best_speedup_ || node.id == 0)) {
    best_speedup_ = *node.speedup;
    run_.best_node = node.id;
  }
  if (node.id != 0 && node.speedup && *node.speedup > best_kernel_speedup_)
    best_kernel_speedup_ = *node.speedup;
  store_.update_run(run_);
}

// Evaluates nodes on `threads` threads as they are pushed, so a search can keep expanding (LLM
// calls) while earlier children are being evaluated on the host.
class GraphSearch::EvaluationQueue {
 public:
  EvaluationQueue(size_t threads, std::function<void(NodeRecord&)> evaluate_one)
      : evaluate_one_(std::move(evaluate_one)) {
    for (size_t t = 0; t < std::max<size_t>(1, threads); ++t)
      pool_.emplace_back([this] { work(); });
  }
  ~EvaluationQueue() { close_and_wait(); }
  void push(NodeRecord node) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(node));
    }
    ready_.notify_one();
  }
  void close_and_wait() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
    for (auto& t : pool_)
      if (t.joinable()) t.join();
  }
  // An exception must never escape a std::thread (std::terminate): the first one an evaluation
  // hit (a store write on a full disk) is rethrown here, on the search's own thread.
  void rethrow_first_error() {
    if (first_error_) std::rethrow_exception(std::exchange(first_error_, nullptr));
  }

 private:
  void work() {
    while (true) {
      NodeRecord node;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        node = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        evaluate_one_(node);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!first_error_) first_error_ = std::current_exception();
        queue_.clear();  // the rest stay pending in the store; a resume evaluates them
      }
    }
  }
  std::function<void(NodeRecord&)> evaluate_one_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<NodeRecord> queue_;
  bool closed_ = false;
  std::exception_ptr first_error_;
  std::vector<std::thread> pool_;
};

void GraphSearch::tune_best(const ProgressSink& on_progress, const std::function<bool()>& cancelled,
                            const std::function<bool()>& llm_cancelled) {
  if (params_.autotune_configs < 2 || state_.tuned_round == state_.round) return;
  std::vector<NodeRecord> nodes = store_.nodes(run_.id);
  const NodeRecord* best = best_node(nodes);
  if (!best || (reference_root_ && best->id == 0) || was_tuned(best->metrics.facts)) return;
  // With an LLM the Autotuner may widen the derived space; whatever it answers, the derived
  // space still serves (an LLM error that ends the run ends it at the next expansion).
  std::optional<TuningSpace> widened;
  try {
    const std::string metrics =
        best->metrics.bottleneck ? best->metrics.bottleneck->summary : std::string();
    widened = expander_.tuning_space(best->code, run_.kernel, metrics,
                                     static_cast<size_t>(params_.autotune_configs), llm_cancelled);
  } catch (const llm::LlmError& e) {
    spdlog::warn("run {}: the Autotuner: {}", run_.id, e.what());
  }
  if (widened) {
    std::lock_guard lock(mutex_);
    run_.cost.tokens_in += widened->usage.input_tokens;
    run_.cost.tokens_out += widened->usage.output_tokens;
    run_.cost.usd += widened->usage.cost_usd;
    if (!widened->ok()) spdlog::warn("run {}: the Autotuner: {}", run_.id, widened->error);
  }
  AutotunePhase phase =
      autotune_phase(evaluator_, best->code, params_.autotune_configs, cancelled, widened);
  if (!phase.ran || (cancelled && cancelled())) return;  // a cancelled phase runs again on resume
  NodeRecord tuned = *best;
  tuned.metrics.facts["tuning"] = phase.record;
  store_.update_node(tuned);
  state_.tuned_round = state_.round;
  std::string message = "autotune: node " + std::to_string(tuned.id) + ": ";
  if (!phase.outcome.error.empty())
    message += phase.outcome.error;
  else
    message += std::to_string(phase.outcome.configs) + " configurations (" +
               std::to_string(phase.outcome.cache_hits) + " from the tuning cache), " +
               (phase.child ? "a better one found" : "its own is the best");
  {
    std::lock_guard lock(mutex_);
    run_.cost.tuning_evaluations += phase.outcome.evaluated;
    run_.cost.tuning_cache_hits += phase.outcome.cache_hits;
    run_.params.state.tuned_round = state_.tuned_round;
    store_.update_run(run_);
    spdlog::info("run {}: {}", run_.id, message);
    if (on_progress) on_progress(progress(message));
  }
  if (!phase.child) return;
  if (budget_.evaluations > 0 && run_.cost.evaluations >= budget_.evaluations) return;
  const std::string hash = candidate_hash(phase.child->code);
  for (const NodeRecord& n : nodes)
    if (n.code_hash == hash) return;  // the search has that kernel already
  NodeRecord child;
  child.run_id = run_.id;
  child.parent = tuned.id;
  child.depth = tuned.depth + 1;
  child.strategy = "autotune_phase";
  child.description = phase.child->description;
  child.code = std::move(phase.child->code);
  child.code_hash = hash;
  child.status = NodeStatus::pending;
  child.id = store_.add_node(child);
  std::vector<NodeRecord> pending{child};
  evaluate_nodes(pending, on_progress, cancelled);
}

bool GraphSearch::improves_on_device(const NodeRecord& node, const Evaluation& evaluation) const {
  if (evaluation.status != NodeStatus::correct || evaluation.time_kind != "device") return false;
  if (!evaluation.score_s || *evaluation.score_s <= 0 || (node.id == 0 && reference_root_))
    return false;
  std::lock_guard lock(mutex_);
  if (node.id == 0 || !baseline_score_) return true;  // the kernel as written starts the best
  // From a reference, the best kernel is what improves (the XLA root is not a kernel).
  return *baseline_score_ / *evaluation.score_s >
         (reference_root_ ? best_kernel_speedup_ : best_speedup_);
}

void GraphSearch::evaluate_one(NodeRecord& node, const ProgressSink& on_progress,
                               const std::function<bool()>& cancelled) {
  if (cancelled && cancelled()) return;  // left pending: a resume evaluates it
  node.status = NodeStatus::evaluating;
  store_.update_node(node);
  Evaluation evaluation = node.id == 0 && reference_root_
                              ? evaluator_.evaluate_reference(cancelled)
                              : evaluator_.evaluate(node.code, cancelled);
  // A kernel that improves the best on a device is profiled, so its diagnosis has the trace.
  if (improves_on_device(node, evaluation)) {
    nlohmann::json profile = evaluator_.device_profile(node.code, cancelled);
    if (profile.is_object()) evaluation.metrics["profile"] = std::move(profile);
  }
  if (evaluation.stage == "cancelled") {
    node.status = NodeStatus::pending;
    store_.update_node(node);
    return;
  }
  finish_node(node, evaluation);
  std::string message = "node " + std::to_string(node.id) + " (" + node.strategy;
  if (!node.description.empty()) message += ": " + node.description;
  message += "): " + to_string(node.status);
  if (node.speedup) message += ", " + format_speedup(*node.speedup);
  if (!evaluation.host.empty()) message += " on host " + evaluation.host;
  if (on_progress) {
    std::lock_guard lock(mutex_);
    on_progress(progress(message));
  }
}

void GraphSearch::evaluate_nodes(std::vector<NodeRecord>& pending, const ProgressSink& on_progress,
                                 const std::function<bool()>& cancelled) {
  EvaluationQueue queue(std::min(params_.concurrency, pending.size()),
                        [&](NodeRecord& n) { evaluate_one(n, on_progress, cancelled); });
  for (NodeRecord& n : pending) queue.push(n);
  queue.close_and_wait();
  queue.rethrow_first_error();
}

std::optional<std::string> GraphSearch::stop_reason(const std::vector<NodeRecord>& nodes, int round,
                                                    int rounds_without_gain) const {
  const double elapsed = state_.elapsed_s + (wall_now() - session_start_);
  if (budget_.target_speedup > 0 && best_speedup_ >= budget_.target_speedup)
    return "target speedup " + format_speedup(budget_.target_speedup) + " reached";
  if (budget_.iterations > 0 && round >= budget_.iterations)
    return "budget: " + std::to_string(budget_.iterations) + " iterations";
  if (budget_.evaluations > 0 && run_.cost.evaluations >= budget_.evaluations)
    return "budget: " + std::to_string(budget_.evaluations) + " evaluations";
  if (budget_.seconds > 0 && elapsed >= budget_.seconds)
    return "budget: " + std::to_string(static_cast<int>(budget_.seconds)) + " s of wall time";
  if (budget_.tokens > 0 && run_.cost.tokens() >= budget_.tokens)
    return "budget: " + std::to_string(budget_.tokens) + " LLM tokens";
  if (budget_.usd > 0 && run_.cost.usd >= budget_.usd) return "budget: LLM cost";
  if (budget_.patience > 0 && rounds_without_gain >= budget_.patience)
    return "no gain in " + std::to_string(budget_.patience) + " iterations";
  // At the roofline: the best kernel (never the reference root, which is the roofline by
  // construction on a predicted run) does the task's minimum work at nearly the peak.
  if (params_.roofline_stop > 0 && run_.best_node && *run_.best_node != 0)
    for (const NodeRecord& n : nodes) {
      if (n.id != *run_.best_node) continue;
      // The roofline is the model's (the task's bytes at the spec sheet's bandwidth): a device
      // time or the model's prediction compares with it; the TPU compiler's static cycles are
      // another basis (its memory-bound kernels sit above 100% of it), so they never stop a run.
      if (n.time_kind == "compiled") break;
      const std::optional<double> fraction = n.metrics.roofline_fraction();
      if (fraction && *fraction >= params_.roofline_stop) {
        char buf[96];
        std::snprintf(buf, sizeof buf,
                      "at the roofline: the best kernel reaches %.0f%% (stop at %.0f%%)",
                      *fraction * 100, params_.roofline_stop * 100);
        return std::string(buf);
      }
    }
  return std::nullopt;
}

RunRecord GraphSearch::run(const std::string& baseline_code, const ProgressSink& on_progress,
                           const std::function<bool()>& cancelled) {
  session_start_ = wall_now();
  run_.status = RunStatus::running;
  run_.stop_reason.clear();
  store_.update_run(run_);

  auto persist_state = [&] {
    run_.params.search = params_;
    run_.params.state = state_;
    run_.params.state.elapsed_s = state_.elapsed_s + (wall_now() - session_start_);
    store_.update_run(run_);
  };
  auto finish = [&](RunStatus status, const std::string& reason) {
    run_.status = status;
    run_.stop_reason = reason;
    persist_state();
    return run_;
  };

  std::vector<NodeRecord> nodes = store_.nodes(run_.id);
  if (nodes.empty()) {
    NodeRecord root;
    root.run_id = run_.id;
    root.strategy = reference_root_ ? "xla_reference" : "baseline";
    root.description =
        reference_root_ ? "the reference as XLA runs it (speedup 1.0)" : "the kernel as written";
    root.code = baseline_code;
    root.code_hash = candidate_hash(baseline_code);
    root.status = NodeStatus::pending;
    store_.add_node(root);
    nodes = store_.nodes(run_.id);
  }
  // Restore what finished nodes already established.
  for (const NodeRecord& n : nodes) {
    if (n.id == 0 && n.finished_at > 0) {
      baseline_score_ = n.score_s;
      baseline_kind_ = n.time_kind;
    }
    if (n.speedup && *n.speedup > best_speedup_) best_speedup_ = *n.speedup;
    if (n.id != 0 && n.speedup && *n.speedup > best_kernel_speedup_)
      best_kernel_speedup_ = *n.speedup;
  }
  if (const NodeRecord* best = best_node(nodes)) run_.best_node = best->id;

  // The root first (every speedup is relative to it), then anything a killed session left.
  if (nodes.front().finished_at == 0) {
    std::vector<NodeRecord> root{nodes.front()};
    evaluate_nodes(root, on_progress, cancelled);
    nodes = store_.nodes(run_.id);
  }
  const NodeRecord& root = nodes.front();
  if (cancelled && cancelled()) return finish(RunStatus::cancelled, "cancelled");
  if (root.status != NodeStatus::correct)
    return finish(RunStatus::failed, (root.status == NodeStatus::failed
                                          ? std::string("the baseline failed")
                                          : "the baseline is " + to_string(root.status)) +
                                         (root.error.empty() ? "" : ": " + root.error));
  if (!root.speedup)
    return finish(RunStatus::failed,
                  "the baseline could not be scored (no device time and no model prediction)");
  // A cancel ends a session at once only while it leaves nodes pending: their resume ends the
  // round. Once a round's nodes have all finished the round is counted first, else the resume
  // (with nothing left over) would run one round more than a whole run.
  auto unfinished = [&] {
    for (const NodeRecord& n : store_.nodes(run_.id))
      if (n.finished_at == 0) return true;
    return false;
  };
  std::vector<NodeRecord> leftover;
  for (const NodeRecord& n : nodes)
    if (n.finished_at == 0) leftover.push_back(n);
  if (!leftover.empty()) {
    spdlog::info("run {}: resuming {} unfinished node(s)", run_.id, leftover.size());
    const double best_before = gain_measure();  // what the finished nodes had established
    evaluate_nodes(leftover, on_progress, cancelled);
    if (cancelled && cancelled() && unfinished()) return finish(RunStatus::cancelled, "cancelled");
    // They are the children of the round the kill interrupted: that round ends now, as it would
    // have without the kill, so the resumed run makes the same choices and rounds as a whole one.
    // Only the round's autotune child pending: the kill came before its rewrites, which follow.
    const bool only_tuned = state_.tuned_round == state_.round &&
                            std::all_of(leftover.begin(), leftover.end(), [](const NodeRecord& n) {
                              return n.strategy == "autotune_phase";
                            });
    if (!only_tuned) {
      ++state_.round;
      state_.rounds_without_gain =
          gain_measure() > best_before * (1 + 1e-6) ? 0 : state_.rounds_without_gain + 1;
    }
    persist_state();
  }

  auto out_of_time = [&] {
    return budget_.seconds > 0 &&
           state_.elapsed_s + (wall_now() - session_start_) >= budget_.seconds;
  };
  int round = state_.round;
  int without_gain = state_.rounds_without_gain;
  while (true) {
    if (cancelled && cancelled()) return finish(RunStatus::cancelled, "cancelled");
    nodes = store_.nodes(run_.id);
    if (auto reason = stop_reason(nodes, round, without_gain))
      return finish(RunStatus::done, *reason);
    const double best_before = gain_measure();
    // Tune the best first, so the round's rewrites start from its best configuration.
    tune_best(on_progress, cancelled, [&] { return (cancelled && cancelled()) || out_of_time(); });
    if (cancelled && cancelled() && unfinished()) return finish(RunStatus::cancelled, "cancelled");
    nodes = store_.nodes(run_.id);
    const std::vector<int64_t> parents = select_parents(nodes, params_, exhausted_);
    if (parents.empty()) return finish(RunStatus::done, "search space exhausted");

    std::set<std::string> known;
    for (const NodeRecord& n : nodes) known.insert(n.code_hash);
    std::vector<NodeRecord> children;
    int evaluations_before = 0;
    {
      std::lock_guard lock(mutex_);
      evaluations_before = run_.cost.evaluations;
    }
    // Children are evaluated while the next parents are expanded.
    EvaluationQueue queue(params_.concurrency,
                          [&](NodeRecord& n) { evaluate_one(n, on_progress, cancelled); });
    for (int64_t parent_id : parents) {
      const NodeRecord* parent = nullptr;
      for (const NodeRecord& n : nodes)
        if (n.id == parent_id) parent = &n;
      if (!parent) continue;
      size_t room = params_.branches;
      if (budget_.evaluations > 0) {
        const int left =
            budget_.evaluations - evaluations_before - static_cast<int>(children.size());
        if (left <= 0) break;
        room = std::min(room, static_cast<size_t>(left));
      }
      ExpansionRequest request;
      request.parent_code = parent->code;
      request.kernel_name = run_.kernel;
      request.parent_is_reference = reference_root_ && parent_id == 0;
      request.known_hashes = known;
      request.max_children = room;
      // The wall-time budget also bounds an LLM call in flight (a hung provider would otherwise
      // hold the run for retries x the client's total timeout).
      request.cancelled = [&] { return (cancelled && cancelled()) || out_of_time(); };
      request.history = lineage_history(nodes, *parent);
      if (params_.diagnosis) request.diagnosis = parent->metrics.bottleneck;
      request.parent_metrics = parent->metrics;
      // An LLM's analysis of the parent is kept on the parent at once (paid for, and a resumed
      // run or a later expansion of this parent reuses it).
      request.record_analysis = [this, parent_id](const nlohmann::json& analysis) {
        std::optional<NodeRecord> stored = store_.node(run_.id, parent_id);
        if (!stored) return;
        stored->metrics.analysis = analysis;
        store_.update_node(*stored);
      };
      llm::Usage unattributed;
      request.unattributed_usage = &unattributed;
      auto charge_unattributed = [&] {
        std::lock_guard lock(mutex_);
        run_.cost.tokens_in += unattributed.input_tokens;
        run_.cost.tokens_out += unattributed.output_tokens;
        run_.cost.usd += unattributed.cost_usd;
      };
      std::vector<Proposal> proposals;
      try {
        proposals = expander_.expand(request);
      } catch (const llm::LlmError& e) {
        // Budget, cancellation, a bad key: the run cannot go on with this expander.
        spdlog::warn("run {}: expanding node {}: {}", run_.id, parent_id, e.what());
        charge_unattributed();
        queue.close_and_wait();  // children already proposed are still evaluated and recorded
        queue.rethrow_first_error();
        if (e.kind() == llm::ErrorKind::Cancelled && !(cancelled && cancelled()) && out_of_time())
          return finish(RunStatus::done,
                        "budget: " + std::to_string(static_cast<int>(budget_.seconds)) +
                            " s of wall time (an LLM call was cut short)");
        return finish(
            e.kind() == llm::ErrorKind::Cancelled ? RunStatus::cancelled : RunStatus::done,
            std::string("LLM: ") + e.what());
      } catch (const std::exception& e) {
        spdlog::warn("run {}: expanding node {} failed: {}", run_.id, parent_id, e.what());
      }
      charge_unattributed();
      if (proposals.empty()) exhausted_.insert(parent_id);
      for (Proposal& p : proposals) {
        NodeRecord child;
        child.run_id = run_.id;
        child.parent = parent_id;
        child.depth = parent->depth + 1;
        child.strategy = p.strategy;
        child.description = p.description;
        child.plan = p.plan;
        if (!p.answers.empty()) {
          child.plan += "\n\nAnswers the diagnosis: " + p.answers;
          child.metrics.answers = p.answers;
        }
        child.code = std::move(p.code);
        child.code_hash = candidate_hash(child.code);
        child.status = NodeStatus::pending;
        child.cost.tokens_in = p.usage.input_tokens;
        child.cost.tokens_out = p.usage.output_tokens;
        child.cost.usd = p.usage.cost_usd;
        known.insert(child.code_hash);
        child.id = store_.add_node(child);
        queue.push(child);
        children.push_back(std::move(child));
      }
    }
    queue.close_and_wait();
    queue.rethrow_first_error();
    if (children.empty()) continue;  // every parent was exhausted; selection moves on
    if (cancelled && cancelled() && unfinished()) return finish(RunStatus::cancelled, "cancelled");
    ++round;
    without_gain = gain_measure() > best_before * (1 + 1e-6) ? 0 : without_gain + 1;
    state_.round = round;
    state_.rounds_without_gain = without_gain;
    persist_state();
    if (on_progress) {
      std::lock_guard lock(mutex_);
      on_progress(progress("iteration " + std::to_string(round) + " done"));
    }
  }
}

}  // namespace mk::agents
