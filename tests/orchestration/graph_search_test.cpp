// The search loop over a scripted evaluator and a scripted expander, on a real RunStore (SQLite in
// a temp dir): the root and the best, the budgets and their stop reasons, patience (also from a
// reference), dedupe through known_hashes, cancellation and resume after a kill. No worker.
#include "agents/orchestration/graph_search.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/orchestration/autotune_phase.h"
#include "agents/orchestration/evaluator.h"
#include "agents/orchestration/selection.h"
#include "agents/tuning/search_space.h"
#include "knowledge/time_model.h"

namespace mk::agents {
namespace {

using nlohmann::json;

// A candidate file; `name` tells candidates apart (normalised sources differ).
std::string gs_code(const std::string& name) {
  return "KERNEL = '" + name + "'\n";
}

Evaluation gs_verdict(const std::string& status, std::optional<double> score_s) {
  Evaluation e;
  e.status = node_status_from_string(status);
  e.score_s = score_s;
  e.time_kind = score_s ? "predicted" : "";
  if (status == "failed") {
    e.stage = "lowering";
    e.error = "scripted lowering error (line 1)";
  } else if (status == "incorrect") {
    e.stage = "correctness";
    e.error = "scripted mismatch";
  }
  return e;
}

// Maps a candidate's code to a scripted verdict and counts the calls per code; called from the
// search's evaluation threads. `on_evaluate` runs inside each call (to cancel or throw mid-run).
class ScriptedEvaluator final : public Evaluator {
 public:
  ScriptedEvaluator() : target_(*knowledge::find_tpu_generation("v5e")) {}

  void correct(const std::string& code, double score_s) {
    script(code, gs_verdict("correct", score_s));
  }
  void incorrect(const std::string& code, double score_s) {
    script(code, gs_verdict("incorrect", score_s));
  }
  void failed(const std::string& code) { script(code, gs_verdict("failed", std::nullopt)); }
  void script(const std::string& code, Evaluation e) {
    std::lock_guard lock(mutex_);
    script_[code] = std::move(e);
  }
  void script_reference(Evaluation e) {
    std::lock_guard lock(mutex_);
    reference_ = std::move(e);
  }

  Evaluation evaluate(const std::string& source, const std::function<bool()>& cancelled) override {
    Evaluation e = gs_verdict("failed", std::nullopt);
    e.error = "unscripted candidate";
    {
      std::lock_guard lock(mutex_);
      ++calls_[source];
      if (auto it = script_.find(source); it != script_.end()) e = it->second;
    }
    if (on_evaluate) on_evaluate(source);
    // As the worker does: a job cancelled while it runs comes back "cancelled".
    if (honour_cancel && cancelled && cancelled()) {
      Evaluation c = gs_verdict("failed", std::nullopt);
      c.stage = "cancelled";
      c.error = "cancelled";
      return c;
    }
    return e;
  }
  Evaluation evaluate_reference(const std::function<bool()>& cancelled) override {
    (void)cancelled;
    std::lock_guard lock(mutex_);
    ++reference_calls_;
    return reference_;
  }
  std::string lowering_error(const std::string& source,
                             const std::function<bool()>& cancelled) override {
    (void)source;
    (void)cancelled;
    return "";
  }
  const knowledge::TpuGeneration& target() const override { return target_; }
  json device_profile(const std::string& source, const std::function<bool()>& cancelled) override {
    (void)cancelled;
    std::lock_guard lock(mutex_);
    ++profiles_[source];
    return {{"summary", {{"measured", "device"}, {"pallas_share", 0.75}}}};
  }

  // The autotune phase: the scripted outcome, the calls counted.
  TuningOutcome autotune(const std::string& source, const json& space,
                         const std::function<bool()>& cancelled) override {
    (void)source;
    (void)cancelled;
    std::lock_guard lock(mutex_);
    ++tunings_;
    last_space_ = space;
    return tuning_;
  }
  void script_tuning(TuningOutcome t) {
    std::lock_guard lock(mutex_);
    tuning_ = std::move(t);
  }
  int tunings() const {
    std::lock_guard lock(mutex_);
    return tunings_;
  }
  json last_space() const {
    std::lock_guard lock(mutex_);
    return last_space_;
  }

  int profiles(const std::string& code) const {
    std::lock_guard lock(mutex_);
    auto it = profiles_.find(code);
    return it == profiles_.end() ? 0 : it->second;
  }
  int calls(const std::string& code) const {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(code);
    return it == calls_.end() ? 0 : it->second;
  }
  int total_calls() const {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const auto& [code, count] : calls_) n += count;
    return n;
  }
  int reference_calls() const {
    std::lock_guard lock(mutex_);
    return reference_calls_;
  }

  std::function<void(const std::string&)> on_evaluate;  // set before the run starts
  bool honour_cancel = true;

 private:
  const knowledge::TpuGeneration& target_;
  mutable std::mutex mutex_;
  std::map<std::string, Evaluation> script_;
  std::map<std::string, int> calls_;
  std::map<std::string, int> profiles_;
  TuningOutcome tuning_;
  int tunings_ = 0;
  json last_space_;
  Evaluation reference_ = gs_verdict("failed", std::nullopt);
  int reference_calls_ = 0;
};

Proposal gs_proposal(const std::string& code, int64_t tokens_in = 0) {
  Proposal p;
  p.code = code;
  p.strategy = "scripted";
  p.description = "scripted child";
  p.usage.input_tokens = tokens_in;
  return p;
}

struct GsSeenRequest {
  std::string parent_code;
  std::set<std::string> known_hashes;
  size_t max_children = 0;
  bool parent_is_reference = false;
  std::string history;
};

// Returns the scripted children of a parent (by its code) on its first expansion, its second, ...
// (none after the script ends) and records every request. It keeps the Expander contract as the
// real expanders do: no proposal whose hash is known, at most max_children.
class ScriptedExpander final : public Expander {
 public:
  void script(const std::string& parent, std::vector<std::vector<Proposal>> expansions) {
    script_[parent] = std::move(expansions);
  }
  std::vector<Proposal> expand(const ExpansionRequest& request) override {
    requests.push_back({request.parent_code, request.known_hashes, request.max_children,
                        request.parent_is_reference, request.history});
    if (on_expand) on_expand(request);
    const size_t nth = asked_[request.parent_code]++;
    auto it = script_.find(request.parent_code);
    if (it == script_.end() || nth >= it->second.size()) return {};
    std::vector<Proposal> out;
    std::set<std::string> seen = request.known_hashes;
    for (const Proposal& p : it->second[nth]) {
      if (out.size() >= request.max_children) break;
      if (seen.insert(candidate_hash(p.code)).second)
        out.push_back(p);
      else
        dropped.push_back(p.code);
    }
    return out;
  }
  std::string name() const override { return "scripted"; }
  std::optional<TuningSpace> tuning_space(const std::string& code, const std::string& kernel_name,
                                          const std::string& metrics, size_t max_configs,
                                          const std::function<bool()>& cancelled) override {
    (void)code;
    (void)kernel_name;
    (void)metrics;
    (void)max_configs;
    (void)cancelled;
    ++tuning_asked;
    return widened;
  }

  std::optional<TuningSpace> widened;  // what the Autotuner answers (nullopt: no LLM)
  int tuning_asked = 0;
  std::vector<GsSeenRequest> requests;
  std::vector<std::string> dropped;  // proposals withheld because their hash was known
  std::function<void(const ExpansionRequest&)> on_expand;

 private:
  std::map<std::string, std::vector<std::vector<Proposal>>> script_;
  std::map<std::string, size_t> asked_;
};

// A chain for greedy search with one branch: node i's only child is node i+1; the root scores
// 1 ms and node i scores 1 ms / speedups[i] (speedups[0] is the root's 1.0).
void gs_chain(ScriptedEvaluator& evaluator, ScriptedExpander& expander,
              const std::vector<double>& speedups) {
  for (size_t i = 0; i < speedups.size(); ++i) {
    const std::string code = gs_code("c" + std::to_string(i));
    evaluator.correct(code, 1e-3 / speedups[i]);
    if (i + 1 < speedups.size())
      expander.script(code, {{gs_proposal(gs_code("c" + std::to_string(i + 1)))}});
  }
}

class GraphSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("mk-graphsearch-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store_.emplace(dir_ / "store.sqlite");
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  RunStore& store() { return *store_; }

  std::string create_run(const json& search, const json& budget, bool from_reference = false) {
    RunRecord r;
    r.mode = "graph";
    r.strategy = search.value("strategy", "beam");
    r.file = "/tmp/kernel.py";
    r.target = "v5e";
    r.host = "local";
    r.llm = "none";
    r.status = RunStatus::running;
    r.params.search = SearchParams::from_json(search);
    r.params.from_reference = from_reference;
    r.budget = Budget::from_json(budget);
    return store().create_run(r);
  }

  const SearchState& state(const RunRecord& run) { return run.params.state; }
  int evaluations(const RunRecord& run) { return run.cost.evaluations; }
  const NodeRecord* node_with_code(const std::vector<NodeRecord>& nodes, const std::string& code) {
    for (const NodeRecord& n : nodes)
      if (n.code == code) return &n;
    return nullptr;
  }

  std::filesystem::path dir_;
  std::optional<RunStore> store_;
};

const json kGsGreedy = {{"strategy", "greedy"}, {"branches", 1}, {"max_depth", 10}};

TEST_F(GraphSearchTest, RootIsEvaluatedOnceAndTheBestIsTheFastestCorrectNode) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root");
  evaluator.correct(root, 10e-6);
  evaluator.incorrect(gs_code("wrong"), 1e-6);  // the fastest, but wrong
  evaluator.failed(gs_code("broken"));
  evaluator.correct(gs_code("fast"), 5e-6);  // 2.0x
  evaluator.correct(gs_code("ok"), 8e-6);    // 1.25x
  expander.script(root, {{gs_proposal(gs_code("wrong")), gs_proposal(gs_code("broken")),
                          gs_proposal(gs_code("fast")), gs_proposal(gs_code("ok"))}});
  const std::string id = create_run({{"strategy", "greedy"}, {"branches", 4}}, {{"iterations", 1}});
  std::vector<SearchProgress> progress;
  GraphSearch search(store(), evaluator, expander, id);
  const RunRecord run = search.run(root, [&](const SearchProgress& p) { progress.push_back(p); });

  EXPECT_EQ(run.status, RunStatus::done);
  EXPECT_EQ(run.stop_reason, "budget: 1 iterations");
  EXPECT_EQ(run.score_kind, "predicted (model, v5e)");
  EXPECT_EQ(evaluator.calls(root), 1);
  EXPECT_EQ(evaluator.total_calls(), 5);
  EXPECT_EQ(evaluations(run), 5);

  const auto nodes = store().nodes(id);
  ASSERT_EQ(nodes.size(), 5u);
  EXPECT_EQ(nodes[0].strategy, "baseline");
  EXPECT_EQ(nodes[0].status, NodeStatus::correct);
  EXPECT_DOUBLE_EQ(*nodes[0].speedup, 1.0);
  const NodeRecord* wrong = node_with_code(nodes, gs_code("wrong"));
  const NodeRecord* broken = node_with_code(nodes, gs_code("broken"));
  const NodeRecord* fast = node_with_code(nodes, gs_code("fast"));
  ASSERT_TRUE(wrong && broken && fast);
  EXPECT_EQ(wrong->status, NodeStatus::incorrect);
  EXPECT_FALSE(wrong->speedup);  // an incorrect node never gets a speedup
  EXPECT_EQ(broken->status, NodeStatus::failed);
  EXPECT_NE(broken->error.find("line 1"), std::string::npos);
  EXPECT_EQ(*broken->parent, 0);
  EXPECT_EQ(broken->depth, 1);
  EXPECT_DOUBLE_EQ(*fast->speedup, 2.0);
  ASSERT_TRUE(run.best_node);
  EXPECT_EQ(*run.best_node, fast->id);
  EXPECT_EQ(store().run(id)->best_node, fast->id);

  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().message, "iteration 1 done");
  EXPECT_EQ(progress.back().round, 1);
  EXPECT_EQ(progress.back().max_rounds, 1);
  EXPECT_DOUBLE_EQ(progress.back().best_speedup, 2.0);
  // The request carried the way to the parent.
  ASSERT_EQ(expander.requests.size(), 1u);
  EXPECT_EQ(expander.requests[0].max_children, 4u);
  EXPECT_NE(expander.requests[0].history.find("node 0 (baseline)"), std::string::npos);
}

TEST_F(GraphSearchTest, OnADeviceEachKernelThatImprovesTheBestIsProfiledForItsDiagnosis) {
  for (const char* kind : {"device", "predicted"}) {
    ScriptedEvaluator evaluator;
    ScriptedExpander expander;
    const auto device = [&](const std::string& code, double score_s) {
      Evaluation e = gs_verdict("correct", score_s);
      e.time_kind = kind;
      evaluator.script(code, e);
    };
    const std::string root = gs_code("root");
    device(root, 10e-6);
    device(gs_code("better"), 8e-6);  // 1.25x: a new best
    device(gs_code("best"), 5e-6);    // 2x: a new best
    device(gs_code("good"), 6e-6);    // 1.67x: better than the root, not than the best
    expander.script(root, {{gs_proposal(gs_code("better")), gs_proposal(gs_code("best")),
                            gs_proposal(gs_code("good"))}});
    const std::string id = create_run({{"strategy", "greedy"}, {"branches", 3}, {"concurrency", 1}},
                                      {{"iterations", 1}});
    GraphSearch(store(), evaluator, expander, id).run(root);

    const bool on_device = std::string(kind) == "device";
    EXPECT_EQ(evaluator.profiles(root), on_device ? 1 : 0) << kind;
    EXPECT_EQ(evaluator.profiles(gs_code("better")), on_device ? 1 : 0) << kind;
    EXPECT_EQ(evaluator.profiles(gs_code("best")), on_device ? 1 : 0) << kind;
    EXPECT_EQ(evaluator.profiles(gs_code("good")), 0) << kind;
    const auto nodes = store().nodes(id);
    const NodeRecord* best = node_with_code(nodes, gs_code("best"));
    const NodeRecord* good = node_with_code(nodes, gs_code("good"));
    ASSERT_TRUE(best && good && best->metrics.bottleneck && good->metrics.bottleneck);
    // The trace's share reaches the profiled node's diagnosis; the unprofiled node has none.
    if (on_device) {
      ASSERT_TRUE(best->metrics.bottleneck->pallas_share);
      EXPECT_DOUBLE_EQ(*best->metrics.bottleneck->pallas_share, 0.75);
    } else {
      EXPECT_FALSE(best->metrics.bottleneck->pallas_share);
    }
    EXPECT_FALSE(good->metrics.bottleneck->pallas_share);
  }
}

TEST_F(GraphSearchTest, TheRootStaysBestWhenNoChildBeatsIt) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root");
  evaluator.correct(root, 1e-6);
  evaluator.correct(gs_code("slow"), 2e-6);
  evaluator.incorrect(gs_code("wrong"), 1e-7);
  expander.script(root, {{gs_proposal(gs_code("slow")), gs_proposal(gs_code("wrong"))}});
  const std::string id = create_run({{"strategy", "greedy"}, {"branches", 2}}, {{"iterations", 1}});
  GraphSearch search(store(), evaluator, expander, id);
  const RunRecord run = search.run(root);
  // The run's best is the node best_node() picks from the graph, as a resumed run records it.
  const auto nodes = store().nodes(id);
  const NodeRecord* best = best_node(nodes);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->id, 0);
  ASSERT_TRUE(run.best_node);
  EXPECT_EQ(*run.best_node, 0);
}

TEST_F(GraphSearchTest, ASpeedupComparesOnlyScoresOfTheRootsKind) {
  // The root scored by the TPU compiler; a child the compiler could not score falls back to the
  // model (a roofline, far more flattering) and one was only interpreted: neither gets a speedup
  // or can be best, however small its score.
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root");
  auto scored = [](double s, const char* kind) {
    Evaluation e = gs_verdict("correct", s);
    e.time_kind = kind;
    return e;
  };
  evaluator.script(root, scored(10e-6, "compiled"));
  evaluator.script(gs_code("compiled"), scored(8e-6, "compiled"));  // 1.25x
  evaluator.script(gs_code("model"), scored(1e-6, "predicted"));
  evaluator.script(gs_code("interpret"), scored(1e-7, "interpret"));
  expander.script(root, {{gs_proposal(gs_code("compiled")), gs_proposal(gs_code("model")),
                          gs_proposal(gs_code("interpret"))}});
  const std::string id = create_run({{"strategy", "greedy"}, {"branches", 3}}, {{"iterations", 1}});
  GraphSearch search(store(), evaluator, expander, id);
  const RunRecord run = search.run(root);
  EXPECT_EQ(run.score_kind, "predicted (TPU compiler, v5e)");
  const auto nodes = store().nodes(id);
  const NodeRecord* compiled = node_with_code(nodes, gs_code("compiled"));
  const NodeRecord* model = node_with_code(nodes, gs_code("model"));
  const NodeRecord* interpret = node_with_code(nodes, gs_code("interpret"));
  ASSERT_TRUE(compiled && model && interpret);
  ASSERT_TRUE(compiled->speedup);
  EXPECT_DOUBLE_EQ(*compiled->speedup, 1.25);
  EXPECT_EQ(model->status, NodeStatus::correct);
  EXPECT_FALSE(model->speedup);
  EXPECT_FALSE(interpret->speedup);
  ASSERT_TRUE(run.best_node);
  EXPECT_EQ(*run.best_node, compiled->id);
}

TEST_F(GraphSearchTest, ABaselineThatIsNotCorrectOrNotScoredFailsTheRun) {
  {
    ScriptedEvaluator evaluator;
    ScriptedExpander expander;
    evaluator.incorrect(gs_code("root"), 1e-6);
    const std::string id = create_run(kGsGreedy, {{"iterations", 3}});
    const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(gs_code("root"));
    EXPECT_EQ(run.status, RunStatus::failed);
    EXPECT_EQ(run.stop_reason, "the baseline is incorrect: scripted mismatch");
    EXPECT_TRUE(expander.requests.empty());
  }
  {
    ScriptedEvaluator evaluator;
    ScriptedExpander expander;
    evaluator.script(gs_code("root"), gs_verdict("correct", std::nullopt));
    const std::string id = create_run(kGsGreedy, {{"iterations", 3}});
    const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(gs_code("root"));
    EXPECT_EQ(run.status, RunStatus::failed);
    EXPECT_EQ(run.stop_reason,
              "the baseline could not be scored (no device time and no model prediction)");
  }
}

TEST_F(GraphSearchTest, IterationsBudgetStopsAfterThatManyRounds) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_chain(evaluator, expander, {1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6});
  const std::string id = create_run(kGsGreedy, {{"iterations", 3}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"));
  EXPECT_EQ(run.status, RunStatus::done);
  EXPECT_EQ(run.stop_reason, "budget: 3 iterations");
  EXPECT_EQ(expander.requests.size(), 3u);
  EXPECT_EQ(store().nodes(id).size(), 4u);
  EXPECT_EQ(state(run).round, 3);
  EXPECT_EQ(*run.best_node, 3);
}

TEST_F(GraphSearchTest, EvaluationsBudgetCountsTheRootAndBoundsTheChildrenAsked) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root");
  evaluator.correct(root, 1e-6);
  std::vector<Proposal> four;
  for (int i = 0; i < 4; ++i) {
    evaluator.correct(gs_code("k" + std::to_string(i)), 1e-6 / (1.5 + i));
    four.push_back(gs_proposal(gs_code("k" + std::to_string(i))));
  }
  expander.script(root, {four});
  const std::string id =
      create_run({{"strategy", "greedy"}, {"branches", 4}}, {{"evaluations", 3}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
  EXPECT_EQ(run.stop_reason, "budget: 3 evaluations");
  ASSERT_EQ(expander.requests.size(), 1u);
  EXPECT_EQ(expander.requests[0].max_children, 2u);  // 3 minus the root's evaluation
  EXPECT_EQ(evaluator.total_calls(), 3);
  EXPECT_EQ(evaluations(run), 3);
}

TEST_F(GraphSearchTest, TargetStopsInTheRoundThatReachesIt) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_chain(evaluator, expander, {1.0, 1.2, 1.6, 2.1, 3.0});
  const std::string id = create_run(kGsGreedy, {{"iterations", 10}, {"target_speedup", 1.5}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"));
  EXPECT_EQ(run.status, RunStatus::done);
  EXPECT_EQ(run.stop_reason, "target speedup 1.50x reached");
  EXPECT_EQ(expander.requests.size(), 2u);  // round 2 reached 1.6x: no third expansion
  EXPECT_EQ(store().nodes(id).size(), 3u);
  EXPECT_EQ(state(run).round, 2);
}

TEST_F(GraphSearchTest, PatienceStopsAfterThatManyRoundsWithoutAGain) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root"), good = gs_code("good");
  evaluator.correct(root, 1e-3);
  evaluator.correct(good, 1e-3 / 1.5);
  // Greedy expands the best node, `good`, again each round: its children are all slower.
  for (const char* name : {"s1", "s2", "s3", "s4"}) evaluator.correct(gs_code(name), 1e-3 / 1.2);
  expander.script(root, {{gs_proposal(good)}});
  expander.script(good, {{gs_proposal(gs_code("s1"))},
                         {gs_proposal(gs_code("s2"))},
                         {gs_proposal(gs_code("s3"))},
                         {gs_proposal(gs_code("s4"))}});
  const std::string id = create_run(kGsGreedy, {{"iterations", 10}, {"patience", 2}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
  EXPECT_EQ(run.status, RunStatus::done);
  EXPECT_EQ(run.stop_reason, "no gain in 2 iterations");
  EXPECT_EQ(expander.requests.size(), 3u);  // one gaining round, then two without
  EXPECT_EQ(state(run).round, 3);
  EXPECT_EQ(state(run).rounds_without_gain, 2);
  EXPECT_EQ(store().nodes(id)[static_cast<size_t>(*run.best_node)].code, good);
}

// A scripted node whose metrics carry the task's minimum work: at `fraction` of its roofline.
Evaluation gs_at_roofline(const knowledge::TpuGeneration& target, double fraction, double* score) {
  knowledge::KernelCostFacts facts;
  facts.hbm_bytes = 8e7;
  facts.grid_steps = 0;
  const auto roof = knowledge::predict_time(facts, target);
  Evaluation e = gs_verdict("correct", roof->memory_seconds / fraction);
  e.metrics = {{"task_work", {{"flops", 0}, {"matmul_flops", 0}, {"min_bytes", 8e7}}}};
  *score = *e.score_s;
  return e;
}

TEST_F(GraphSearchTest, AtTheRooflineStopsOnceTheBestKernelReachesTheSetFraction) {
  for (const double stop_at : {0.9, 0.0}) {
    ScriptedEvaluator evaluator;
    ScriptedExpander expander;
    const std::string root = gs_code("root"), near = gs_code("near"), next = gs_code("next");
    double near_score = 0, next_score = 0;
    evaluator.script(near, gs_at_roofline(evaluator.target(), 0.95, &near_score));
    evaluator.script(next, gs_at_roofline(evaluator.target(), 0.97, &next_score));
    evaluator.correct(root, near_score * 3);
    expander.script(root, {{gs_proposal(near)}});
    expander.script(near, {{gs_proposal(next)}});
    json search = kGsGreedy;
    search["roofline_stop"] = stop_at;
    const std::string id = create_run(search, {{"iterations", 2}});
    const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
    EXPECT_EQ(run.status, RunStatus::done);
    const NodeRecord best = store().nodes(id)[static_cast<size_t>(*run.best_node)];
    if (stop_at > 0) {
      EXPECT_EQ(run.stop_reason, "at the roofline: the best kernel reaches 95% (stop at 90%)");
      EXPECT_EQ(expander.requests.size(), 1u);  // `near` is never expanded
      EXPECT_EQ(best.code, near);
    } else {
      EXPECT_EQ(run.stop_reason, "budget: 2 iterations");  // 0 turns the rule off
      EXPECT_EQ(best.code, next);
    }
    EXPECT_NEAR(best.metrics.roofline_fraction().value_or(0.0), stop_at > 0 ? 0.95 : 0.97, 1e-9);
  }
}

TEST_F(GraphSearchTest, AScoreOfTheTpuCompilerNeverStopsARunAtTheModelsRoofline) {
  // libtpu's static cycles put memory-bound kernels above the model's roofline (133% for
  // rmsnorm, bench/RESULTS.md): the two bases do not compare, so the run goes on.
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root"), near = gs_code("near"), next = gs_code("next");
  double near_score = 0, next_score = 0;
  Evaluation above = gs_at_roofline(evaluator.target(), 1.33, &near_score);
  above.time_kind = "compiled";
  Evaluation further = gs_at_roofline(evaluator.target(), 1.40, &next_score);
  further.time_kind = "compiled";
  evaluator.script(near, above);
  evaluator.script(next, further);
  Evaluation root_eval = gs_verdict("correct", near_score * 3);
  root_eval.time_kind = "compiled";
  evaluator.script(root, root_eval);
  expander.script(root, {{gs_proposal(near)}});
  expander.script(near, {{gs_proposal(next)}});
  json search = kGsGreedy;
  search["roofline_stop"] = 0.9;
  const std::string id = create_run(search, {{"iterations", 2}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
  EXPECT_EQ(run.stop_reason, "budget: 2 iterations");
  EXPECT_EQ(expander.requests.size(), 2u);
  EXPECT_EQ(store().nodes(id)[static_cast<size_t>(*run.best_node)].code, next);
}

TEST_F(GraphSearchTest, TheParentsDiagnosisReachesTheExpanderAndEachChildRecordsWhatItAnswers) {
  for (const bool use_diagnosis : {true, false}) {
    ScriptedEvaluator evaluator;
    ScriptedExpander expander;
    const std::string root = gs_code("root"), child = gs_code("child");
    Evaluation r = gs_verdict("correct", 1e-3);
    r.metrics = {
        {"pallas_calls", {{{"kernel", "k"}, {"grid", {4096}}, {"traffic", {{"available", true}}}}}},
        {"predictions",
         {{{"compute_s", 1e-7}, {"memory_s", 1e-6}, {"overhead_s", 1e-3}, {"predicted_s", 1e-3}}}}};
    evaluator.script(root, r);
    evaluator.correct(child, 5e-4);
    Proposal p = gs_proposal(child);
    p.answers = "grid overhead-bound -> BLOCK 8 -> 512";
    expander.script(root, {{p}});
    std::vector<std::optional<Diagnosis>> seen;
    expander.on_expand = [&](const ExpansionRequest& req) { seen.push_back(req.diagnosis); };
    json search = kGsGreedy;
    search["diagnosis"] = use_diagnosis;
    const std::string id = create_run(search, {{"iterations", 1}});
    GraphSearch(store(), evaluator, expander, id).run(root);
    ASSERT_EQ(seen.size(), 1u);
    const auto nodes = store().nodes(id);
    ASSERT_TRUE(nodes[0].metrics.bottleneck);
    EXPECT_EQ(nodes[0].metrics.bottleneck->bound, "grid overhead");
    if (use_diagnosis) {
      ASSERT_TRUE(seen[0]);
      EXPECT_EQ(seen[0]->bound, "grid overhead");
    } else {
      EXPECT_FALSE(seen[0]);  // the switch turns the ordering off
    }
    const NodeRecord* c = node_with_code(nodes, child);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->metrics.answers, p.answers);  // kept past evaluation
    EXPECT_NE(c->plan.find("Answers the diagnosis: " + p.answers), std::string::npos);
  }
}

TEST_F(GraphSearchTest, PatienceFromAReferenceWatchesTheBestKernelNotTheRoot) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string reference = "def reference(x):\n    return x\n";
  evaluator.script_reference(gs_verdict("correct", 1e-3));  // XLA: 1.0
  // Kernels slower than XLA but improving (0.5x, 0.7x), then one that is not (0.6x).
  evaluator.correct(gs_code("k1"), 1e-3 / 0.5);
  evaluator.correct(gs_code("k2"), 1e-3 / 0.7);
  evaluator.correct(gs_code("k3"), 1e-3 / 0.6);
  evaluator.correct(gs_code("k4"), 1e-3 / 0.8);
  // Greedy keeps expanding the root (1.0 is the best); each expansion writes a new kernel.
  expander.script(reference, {{gs_proposal(gs_code("k1"))},
                              {gs_proposal(gs_code("k2"))},
                              {gs_proposal(gs_code("k3"))},
                              {gs_proposal(gs_code("k4"))}});
  const std::string id = create_run(kGsGreedy, {{"iterations", 10}, {"patience", 1}}, true);
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(reference);
  EXPECT_EQ(run.stop_reason, "no gain in 1 iterations");
  EXPECT_EQ(expander.requests.size(), 3u);
  EXPECT_EQ(evaluator.reference_calls(), 1);
  EXPECT_EQ(evaluator.calls(reference), 0);  // the root is the reference as XLA runs it
  ASSERT_FALSE(expander.requests.empty());
  EXPECT_TRUE(expander.requests[0].parent_is_reference);
  const auto nodes = store().nodes(id);
  EXPECT_EQ(nodes[0].strategy, "xla_reference");
  EXPECT_DOUBLE_EQ(*node_with_code(nodes, gs_code("k2"))->speedup, 0.7);
}

TEST_F(GraphSearchTest, KnownHashesCoverTheRunAndEarlierSiblingsSoADuplicateRunsOnce) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root");
  const std::string root_again = root + "# the same kernel with a comment\n";
  const std::string x = gs_code("x"), x_again = "\n" + x + "   # again\n";
  ASSERT_EQ(candidate_hash(root), candidate_hash(root_again));
  ASSERT_EQ(candidate_hash(x), candidate_hash(x_again));
  evaluator.correct(root, 1e-3);
  evaluator.correct(gs_code("a"), 1e-3 / 2.0);
  evaluator.correct(gs_code("b"), 1e-3 / 1.5);
  evaluator.correct(x, 1e-3 / 3.0);
  evaluator.correct(x_again, 1e-3 / 3.0);
  evaluator.correct(gs_code("y"), 1e-3 / 2.5);
  evaluator.correct(root_again, 1e-3);
  expander.script(
      root, {{gs_proposal(root_again), gs_proposal(gs_code("a")), gs_proposal(gs_code("b"))}});
  // Round 2 expands a then b (the beam): b proposes what a proposed a moment before.
  expander.script(gs_code("a"), {{gs_proposal(x)}});
  expander.script(gs_code("b"), {{gs_proposal(x_again), gs_proposal(gs_code("y"))}});
  const std::string id =
      create_run({{"strategy", "beam"}, {"beam_size", 2}, {"branches", 3}, {"keep_factor", 0.0}},
                 {{"iterations", 2}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
  EXPECT_EQ(run.stop_reason, "budget: 2 iterations");

  ASSERT_EQ(expander.requests.size(), 3u);
  EXPECT_EQ(expander.requests[0].known_hashes, std::set<std::string>{candidate_hash(root)});
  EXPECT_EQ(expander.requests[1].parent_code, gs_code("a"));
  EXPECT_EQ(expander.requests[2].parent_code, gs_code("b"));
  EXPECT_TRUE(expander.requests[1].known_hashes.count(candidate_hash(gs_code("b"))));
  EXPECT_TRUE(expander.requests[2].known_hashes.count(candidate_hash(x)));  // a's child, this round
  EXPECT_EQ(expander.dropped, (std::vector<std::string>{root_again, x_again}));
  EXPECT_EQ(evaluator.calls(root), 1);
  EXPECT_EQ(evaluator.calls(root_again), 0);
  EXPECT_EQ(evaluator.calls(x), 1);
  EXPECT_EQ(evaluator.calls(x_again), 0);
  EXPECT_EQ(store().nodes(id).size(), 5u);  // root, a, b, x, y
}

TEST_F(GraphSearchTest, TokensBudgetCountsTheUsageProposalsCarry) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_chain(evaluator, expander, {1.0, 1.1, 1.2, 1.3, 1.4});
  for (int i = 0; i < 4; ++i)  // every child cost 100 input tokens
    expander.script(gs_code("c" + std::to_string(i)),
                    {{gs_proposal(gs_code("c" + std::to_string(i + 1)), 100)}});
  const std::string id = create_run(kGsGreedy, {{"iterations", 10}, {"tokens", 250}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"));
  EXPECT_EQ(run.stop_reason, "budget: 250 LLM tokens");
  EXPECT_EQ(expander.requests.size(), 3u);
  EXPECT_EQ(run.cost.tokens_in, 300);
}

TEST_F(GraphSearchTest, AnExpanderWithNothingNewExhaustsTheSearch) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  evaluator.correct(gs_code("root"), 1e-3);
  const std::string id = create_run(kGsGreedy, {{"iterations", 5}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(gs_code("root"));
  EXPECT_EQ(run.status, RunStatus::done);
  EXPECT_EQ(run.stop_reason, "search space exhausted");
  EXPECT_EQ(expander.requests.size(), 1u);
  EXPECT_EQ(state(run).round, 0);
}

TEST_F(GraphSearchTest, AnLlmErrorEndsTheRunAfterRecordingTheChildrenAlreadyProposed) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = gs_code("root");
  evaluator.correct(root, 1e-3);
  evaluator.correct(gs_code("a"), 1e-3 / 2);
  evaluator.correct(gs_code("b"), 1e-3 / 1.5);
  expander.script(root, {{gs_proposal(gs_code("a")), gs_proposal(gs_code("b"))}});
  expander.on_expand = [&](const ExpansionRequest& r) {
    if (r.parent_code == gs_code("b")) throw llm::LlmError(llm::ErrorKind::BadKey, "401 bad key");
  };
  const std::string id =
      create_run({{"strategy", "beam"}, {"beam_size", 2}, {"branches", 2}}, {{"iterations", 5}});
  expander.script(gs_code("a"), {{gs_proposal(gs_code("x"))}});
  evaluator.correct(gs_code("x"), 1e-3 / 3);
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
  EXPECT_EQ(run.status, RunStatus::done);
  EXPECT_EQ(run.stop_reason, "LLM: 401 bad key");
  const auto nodes = store().nodes(id);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(node_with_code(nodes, gs_code("x"))->status,
            NodeStatus::correct);  // a's child still evaluated
  EXPECT_EQ(*run.best_node, node_with_code(nodes, gs_code("x"))->id);
}

TEST_F(GraphSearchTest, CancelledBeforeTheRootLeavesItPending) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  evaluator.correct(gs_code("root"), 1e-3);
  const std::string id = create_run(kGsGreedy, {{"iterations", 2}});
  const RunRecord run =
      GraphSearch(store(), evaluator, expander, id).run(gs_code("root"), {}, [] { return true; });
  EXPECT_EQ(run.status, RunStatus::cancelled);
  EXPECT_EQ(run.stop_reason, "cancelled");
  EXPECT_EQ(evaluator.total_calls(), 0);
  const auto nodes = store().nodes(id);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].status, NodeStatus::pending);
  EXPECT_EQ(store().run(id)->status, RunStatus::cancelled);
}

// The beam search of the resume tests: root -> a, b; a -> c, d and b -> e, f; c -> g, d -> h.
void gs_beam_script(ScriptedEvaluator& evaluator, ScriptedExpander& expander) {
  const std::map<std::string, double> speedup = {{"root", 1.0}, {"a", 2.0}, {"b", 1.6}, {"c", 4.0},
                                                 {"d", 2.5},    {"e", 1.7}, {"g", 5.0}, {"h", 3.0}};
  for (const auto& [name, s] : speedup) evaluator.correct(gs_code(name), 8e-3 / s);
  evaluator.incorrect(gs_code("f"), 1e-3);
  auto children = [](std::initializer_list<const char*> names) {
    std::vector<Proposal> out;
    for (const char* n : names) out.push_back(gs_proposal(gs_code(n)));
    return std::vector<std::vector<Proposal>>{out};
  };
  expander.script(gs_code("root"), children({"a", "b"}));
  expander.script(gs_code("a"), children({"c", "d"}));
  expander.script(gs_code("b"), children({"e", "f"}));
  expander.script(gs_code("c"), children({"g"}));
  expander.script(gs_code("d"), children({"h"}));
}

const json kGsBeam = {{"strategy", "beam"}, {"beam_size", 2}, {"branches", 2}, {"concurrency", 1}};

struct GsNodeView {
  int64_t id;
  std::optional<int64_t> parent;
  std::string code, status;
  std::optional<double> speedup;
  bool operator==(const GsNodeView&) const = default;
};

std::vector<GsNodeView> gs_view(const std::vector<NodeRecord>& nodes) {
  std::vector<GsNodeView> out;
  for (const NodeRecord& n : nodes)
    out.push_back({n.id, n.parent, n.code, to_string(n.status), n.speedup});
  return out;
}

TEST_F(GraphSearchTest, AKilledRunResumesWithoutReevaluatingFinishedNodesAndKeepsItsRounds) {
  // The same search uninterrupted, for comparison.
  ScriptedEvaluator whole_evaluator;
  ScriptedExpander whole_expander;
  gs_beam_script(whole_evaluator, whole_expander);
  const std::string whole_id = create_run(kGsBeam, {{"iterations", 3}});
  const RunRecord whole =
      GraphSearch(store(), whole_evaluator, whole_expander, whole_id).run(gs_code("root"));
  ASSERT_EQ(whole.stop_reason, "budget: 3 iterations");

  // Cancelled while round 2 evaluates c: c comes back cancelled, d, e and f never start.
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_beam_script(evaluator, expander);
  const std::string id = create_run(kGsBeam, {{"iterations", 3}});
  std::atomic<bool> stop{false};
  evaluator.on_evaluate = [&](const std::string& code) {
    if (code == gs_code("c")) stop = true;
  };
  const RunRecord first =
      GraphSearch(store(), evaluator, expander, id).run(gs_code("root"), {}, [&] {
        return stop.load();
      });
  EXPECT_EQ(first.status, RunStatus::cancelled);
  EXPECT_EQ(first.stop_reason, "cancelled");
  EXPECT_EQ(state(first).round, 1);  // round 2 did not finish
  {
    const auto nodes = store().nodes(id);
    ASSERT_EQ(nodes.size(), 7u);
    for (const char* name : {"c", "d", "e", "f"})
      EXPECT_EQ(node_with_code(nodes, gs_code(name))->status, NodeStatus::pending) << name;
  }
  const size_t asked_before = expander.requests.size();
  EXPECT_EQ(asked_before, 3u);

  // A new session (as `maxkernel runs resume`) finishes round 2 from the store, then round 3.
  evaluator.on_evaluate = nullptr;
  const RunRecord resumed = GraphSearch(store(), evaluator, expander, id).run(gs_code("root"));
  EXPECT_EQ(resumed.status, RunStatus::done);
  EXPECT_EQ(resumed.stop_reason, "budget: 3 iterations");
  EXPECT_EQ(state(resumed).round, 3);
  for (const char* name : {"root", "a", "b", "d", "e", "f", "g", "h"})
    EXPECT_EQ(evaluator.calls(gs_code(name)), 1) << name;
  EXPECT_EQ(evaluator.calls(gs_code("c")), 2);  // its first evaluation was cancelled
  // Only round 3's parents were asked again, knowing every node of the first session.
  ASSERT_EQ(expander.requests.size(), asked_before + 2);
  EXPECT_EQ(expander.requests[asked_before].parent_code, gs_code("c"));
  EXPECT_EQ(expander.requests[asked_before].known_hashes.size(), 7u);
  EXPECT_EQ(gs_view(store().nodes(id)), gs_view(store().nodes(whole_id)));
  EXPECT_EQ(resumed.best_node, whole.best_node);
  EXPECT_EQ(evaluations(resumed), evaluations(whole));
}

TEST_F(GraphSearchTest, ANodeLeftEvaluatingByAKillIsEvaluatedOnResume) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_chain(evaluator, expander, {1.0, 1.5, 2.0});
  const std::string id = create_run(kGsGreedy, {{"iterations", 1}});
  ASSERT_EQ(GraphSearch(store(), evaluator, expander, id).run(gs_code("c0")).stop_reason,
            "budget: 1 iterations");
  // What a SIGKILL during round 2 leaves: c2 recorded, its evaluation never finished.
  NodeRecord child;
  child.run_id = id;
  child.parent = 1;
  child.depth = 2;
  child.strategy = "scripted";
  child.code = gs_code("c2");
  child.code_hash = candidate_hash(child.code);
  child.status = NodeStatus::pending;
  child.id = store().add_node(child);
  child.status = NodeStatus::evaluating;
  store().update_node(child);
  RunRecord killed = *store().run(id);
  killed.status = RunStatus::running;
  killed.budget.iterations = 2;
  store().update_run(killed);

  const RunRecord resumed = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"));
  EXPECT_EQ(resumed.stop_reason, "budget: 2 iterations");
  EXPECT_EQ(state(resumed).round, 2);
  EXPECT_EQ(evaluator.calls(gs_code("c0")), 1);
  EXPECT_EQ(evaluator.calls(gs_code("c1")), 1);
  EXPECT_EQ(evaluator.calls(gs_code("c2")), 1);
  EXPECT_EQ(expander.requests.size(), 1u);  // round 2 was the kill's round: nothing asked again
  EXPECT_EQ(*resumed.best_node, child.id);
  EXPECT_DOUBLE_EQ(*store().node(id, child.id)->speedup, 2.0);
}

TEST_F(GraphSearchTest, ARunCancelledAfterItsRoundFinishedStillCountsThatRound) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_chain(evaluator, expander, {1.0, 1.1, 1.2, 1.3, 1.4, 1.5});
  const std::string id = create_run(kGsGreedy, {{"iterations", 3}});
  // The cancel arrives while c1's evaluation is finishing: the evaluation itself completes.
  std::atomic<bool> stop{false};
  evaluator.honour_cancel = false;
  evaluator.on_evaluate = [&](const std::string& code) {
    if (code == gs_code("c1")) stop = true;
  };
  const RunRecord first = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"), {}, [&] {
    return stop.load();
  });
  EXPECT_EQ(first.status, RunStatus::cancelled);
  EXPECT_EQ(store().node(id, 1)->status, NodeStatus::correct);
  EXPECT_EQ(state(first).round, 1);

  evaluator.on_evaluate = nullptr;
  const RunRecord resumed = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"));
  EXPECT_EQ(resumed.stop_reason, "budget: 3 iterations");
  EXPECT_EQ(store().nodes(id).size(), 4u);  // three rounds in all, as without the cancel
  EXPECT_EQ(expander.requests.size(), 3u);
}

TEST_F(GraphSearchTest, AResumeCancelledAfterItsLeftoversFinishedCountsTheirRound) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_chain(evaluator, expander, {1.0, 1.1, 1.2, 1.3, 1.4, 1.5});
  const std::string id = create_run(kGsGreedy, {{"iterations", 3}});
  std::atomic<bool> stop{false};
  evaluator.on_evaluate = [&](const std::string& code) {
    if (code == gs_code("c1")) stop = true;
  };
  // Session 1: c1's evaluation is cancelled (pending). Session 2: the cancel comes while c1's
  // evaluation completes. Session 3 runs to the budget.
  auto cancelled = [&] { return stop.load(); };
  EXPECT_EQ(GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"), {}, cancelled).status,
            RunStatus::cancelled);
  EXPECT_EQ(store().node(id, 1)->status, NodeStatus::pending);
  stop = false;
  evaluator.honour_cancel = false;
  const RunRecord second =
      GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"), {}, cancelled);
  EXPECT_EQ(second.status, RunStatus::cancelled);
  EXPECT_EQ(store().node(id, 1)->status, NodeStatus::correct);
  EXPECT_EQ(state(second).round, 1);

  evaluator.on_evaluate = nullptr;
  const RunRecord third = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"));
  EXPECT_EQ(third.stop_reason, "budget: 3 iterations");
  EXPECT_EQ(store().nodes(id).size(), 4u);
  EXPECT_EQ(expander.requests.size(), 3u);
}

TEST_F(GraphSearchTest, AnEvaluationErrorIsRethrownAndTheRunStaysResumable) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  gs_chain(evaluator, expander, {1.0, 1.5, 2.0});
  const std::string id = create_run(kGsGreedy, {{"iterations", 2}});
  bool fail = true;
  evaluator.on_evaluate = [&](const std::string& code) {
    if (fail && code == gs_code("c1")) throw std::runtime_error("disk full");
  };
  EXPECT_THROW(GraphSearch(store(), evaluator, expander, id).run(gs_code("c0")),
               std::runtime_error);
  EXPECT_EQ(store().node(id, 1)->status, NodeStatus::evaluating);
  EXPECT_EQ(store().node(id, 1)->finished_at, 0);

  fail = false;
  const RunRecord resumed = GraphSearch(store(), evaluator, expander, id).run(gs_code("c0"));
  EXPECT_EQ(resumed.stop_reason, "budget: 2 iterations");
  EXPECT_EQ(evaluator.calls(gs_code("c0")), 1);
  EXPECT_EQ(evaluator.calls(gs_code("c1")), 2);
  EXPECT_EQ(evaluator.calls(gs_code("c2")), 1);
  EXPECT_EQ(store().nodes(id).size(), 3u);
}

// A kernel with one block size to tune (8-row blocks over 256 rows: 8, 16 and 32 are legal).
const char* const kGsTunable = R"(import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 256, 256
BLOCK_ROWS = 8


def _kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def candidate(x):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
                          grid=(ROWS // BLOCK_ROWS,), in_specs=[spec], out_specs=spec)(x)
)";

TuningOutcome gs_tuned(const json& best_config) {
  TuningOutcome t;
  t.best_config = best_config;
  t.best_s = 0.5e-3;
  t.time_kind = "predicted";
  t.configs = 3;
  t.correct = 3;
  t.evaluated = 2;
  t.cache_hits = 1;
  return t;
}

TEST_F(GraphSearchTest, TheAutotunePhaseTunesTheBestOnceAndItsRewritesStartFromTheWinner) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = kGsTunable;
  const std::string tuned = apply_config(root, {{"BLOCK_ROWS", 32}});
  evaluator.correct(root, 1e-3);
  evaluator.correct(tuned, 0.5e-3);
  evaluator.correct(gs_code("rewrite"), 0.4e-3);
  evaluator.script_tuning(gs_tuned({{"BLOCK_ROWS", 32}}));
  expander.script(tuned, {{gs_proposal(gs_code("rewrite"))}});
  const std::string id = create_run(
      {{"strategy", "greedy"}, {"branches", 1}, {"autotune_configs", 4}}, {{"iterations", 2}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);

  EXPECT_EQ(run.stop_reason, "search space exhausted");  // the rewrite has no children
  EXPECT_EQ(evaluator.last_space(), json({{"BLOCK_ROWS", {8, 16, 32}}}));
  // Round 1 tunes the root; round 2's best is the rewrite, whose text has no BLOCK_ROWS to vary.
  EXPECT_EQ(evaluator.tunings(), 1);
  EXPECT_EQ(run.cost.tuning_evaluations, 2);
  EXPECT_EQ(run.cost.tuning_cache_hits, 1);
  const auto nodes = store().nodes(id);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[1].strategy, "autotune_phase");
  EXPECT_EQ(nodes[1].code, tuned);
  EXPECT_EQ(*nodes[1].parent, 0);
  EXPECT_EQ(nodes[1].description,
            "autotune phase: BLOCK_ROWS=32 (best of 3 configurations, 1 from the tuning cache)");
  EXPECT_DOUBLE_EQ(*nodes[1].speedup, 2.0);
  EXPECT_EQ(*nodes[2].parent, nodes[1].id);  // the rewrite builds on the tuned kernel
  const json record = nodes[0].metrics.facts.value("tuning", json());
  EXPECT_EQ(record.value("best_config", json()), json({{"BLOCK_ROWS", 32}}));
  EXPECT_EQ(record.value("evaluated", -1), 2);
  EXPECT_EQ(evaluations(run), 3);
}

TEST_F(GraphSearchTest, AnAutotunePhaseThatKeepsTheKernelsOwnConfigurationAddsNoNode) {
  for (const bool fails : {false, true}) {
    ScriptedEvaluator evaluator;
    ScriptedExpander expander;
    const std::string root = kGsTunable;
    evaluator.correct(root, 1e-3);
    TuningOutcome t = gs_tuned({{"BLOCK_ROWS", 8}});
    if (fails) {
      t = TuningOutcome();
      t.error = "autotune: the host dropped out";
    }
    evaluator.script_tuning(t);
    const std::string id = create_run(
        {{"strategy", "greedy"}, {"branches", 1}, {"autotune_configs", 4}}, {{"iterations", 2}});
    const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
    EXPECT_EQ(store().nodes(id).size(), 1u) << fails;
    EXPECT_EQ(evaluator.tunings(), 1) << fails;  // recorded on the root: never asked twice
    const json record = store().nodes(id)[0].metrics.facts.value("tuning", json());
    EXPECT_EQ(record.value("error", ""), fails ? "autotune: the host dropped out" : "") << fails;
    EXPECT_EQ(run.stop_reason, "search space exhausted") << fails;
  }
}

TEST_F(GraphSearchTest, AKillWhileTheTunedKernelIsEvaluatedResumesIntoTheSameRounds) {
  const std::string root = kGsTunable;
  const std::string tuned = apply_config(root, {{"BLOCK_ROWS", 32}});
  const auto script = [&](ScriptedEvaluator& evaluator, ScriptedExpander& expander) {
    evaluator.correct(root, 1e-3);
    evaluator.correct(tuned, 0.5e-3);
    evaluator.correct(gs_code("rewrite"), 0.4e-3);
    evaluator.script_tuning(gs_tuned({{"BLOCK_ROWS", 32}}));
    expander.script(tuned, {{gs_proposal(gs_code("rewrite"))}});
  };
  const json search = {{"strategy", "greedy"}, {"branches", 1}, {"autotune_configs", 4}};
  ScriptedEvaluator whole_evaluator;
  ScriptedExpander whole_expander;
  script(whole_evaluator, whole_expander);
  const std::string whole_id = create_run(search, {{"iterations", 1}});
  const RunRecord whole = GraphSearch(store(), whole_evaluator, whole_expander, whole_id).run(root);
  ASSERT_EQ(store().nodes(whole_id).size(), 3u);

  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  script(evaluator, expander);
  const std::string id = create_run(search, {{"iterations", 1}});
  bool kill = true;
  evaluator.on_evaluate = [&](const std::string& code) {
    if (kill && code == tuned) throw std::runtime_error("killed");
  };
  EXPECT_THROW(GraphSearch(store(), evaluator, expander, id).run(root), std::runtime_error);
  kill = false;
  const RunRecord resumed = GraphSearch(store(), evaluator, expander, id).run(root);
  // The round's phase is not run again, and its rewrites still follow in the same round.
  EXPECT_EQ(evaluator.tunings(), 1);
  EXPECT_EQ(resumed.stop_reason, whole.stop_reason);
  EXPECT_EQ(state(resumed).round, 1);
  EXPECT_EQ(gs_view(store().nodes(id)), gs_view(store().nodes(whole_id)));
}

TEST_F(GraphSearchTest, TheAutotunersWiderSpaceIsTheOneTunedAndItsUsageIsPaidFor) {
  ScriptedEvaluator evaluator;
  ScriptedExpander expander;
  const std::string root = kGsTunable;
  evaluator.correct(root, 1e-3);
  evaluator.script_tuning(gs_tuned({{"BLOCK_ROWS", 8}}));
  TuningSpace widened;
  widened.params = derive_search_space(root);
  widened.params[0].values.insert(widened.params[0].values.begin() + 1, json(64));
  widened.llm_values_added = 1;
  widened.usage.input_tokens = 120;
  widened.usage.output_tokens = 30;
  expander.widened = widened;
  const std::string id = create_run(
      {{"strategy", "greedy"}, {"branches", 1}, {"autotune_configs", 8}}, {{"iterations", 1}});
  const RunRecord run = GraphSearch(store(), evaluator, expander, id).run(root);
  EXPECT_EQ(expander.tuning_asked, 1);
  EXPECT_EQ(evaluator.last_space(), json({{"BLOCK_ROWS", {8, 64, 16, 32}}}));
  EXPECT_EQ(store().nodes(id)[0].metrics.facts["tuning"].value("llm_values_added", 0), 1);
  EXPECT_EQ(run.cost.tokens_in, 120);
  EXPECT_EQ(run.cost.tokens_out, 30);
}

// HITL's autotune phase: a diagnosis's block direction decides which side of the current block
// size survives the trimming, and the kernel's own configuration's score is reported with it.
TEST(AutotunePhase, TrimsTheSpaceTowardsThePreferredBlocksAndScoresTheKernelsOwn) {
  const std::string code = apply_config(kGsTunable, {{"BLOCK_ROWS", 64}});  // 16 .. 256 legal
  for (const auto& [direction, values] : std::vector<std::pair<int, json>>{
           {0, {64, 128, 32}}, {1, {64, 128, 256}}, {-1, {64, 32, 16}}}) {
    ScriptedEvaluator evaluator;
    TuningOutcome t = gs_tuned({{"BLOCK_ROWS", 128}});
    t.scores = {{{{"BLOCK_ROWS", 128}}, 0.5e-3, "predicted"},
                {{{"BLOCK_ROWS", 64}}, 1e-3, "predicted"}};
    evaluator.script_tuning(t);
    const AutotunePhase phase = autotune_phase(
        evaluator, code, 3, [] { return false; }, std::nullopt, direction);
    EXPECT_EQ(evaluator.last_space(), json({{"BLOCK_ROWS", values}})) << direction;
    EXPECT_EQ(phase.own_config, json({{"BLOCK_ROWS", 64}}));
    ASSERT_TRUE(phase.own.has_value());
    EXPECT_DOUBLE_EQ(phase.own->score_s, 1e-3);
    ASSERT_TRUE(phase.child.has_value());
    EXPECT_EQ(phase.child->code, apply_config(code, {{"BLOCK_ROWS", 128}}));
  }
}

}  // namespace
}  // namespace mk::agents
