// Runs, nodes and HITL sessions are typed records: params, budget, cost and metrics are structs,
// the HITL phase an enum. The store keeps the text it always had, so a file written before the
// records were typed opens without a migration, reads back typed values and, written again,
// keeps the same text. Each struct round-trips through a real SQLite file.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "agents/orchestration/hitl_phase.h"
#include "agents/orchestration/hitl_session.h"
#include "agents/orchestration/run_store.h"
#include "agents/orchestration/session_store.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TypedRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mk-typed-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path() const { return dir_ / "store.sqlite"; }

  // Runs SQL on the file through a plain connection (as an older build or a user would).
  void raw_exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    const std::string why = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << why;
  }

  // The first column of the first row, as a plain connection reads it.
  std::string stored_text(const std::string& query) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &stmt, nullptr), SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
  }

 private:
  fs::path dir_;
};

std::string fixture(const std::string& name) {
  std::ifstream in(fs::path(MK_SOURCE_DIR) / "tests/orchestration/data" / name);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

constexpr const char* kOldRun = "r20261202-095317-72ad";

TEST_F(TypedRecords, ARunRoundTripsEveryTypedField) {
  RunRecord run;
  run.mode = "graph";
  run.params.search.strategy = "ucb";
  run.params.search.beam_size = 5;
  run.params.search.roofline_stop = 0.8;
  run.params.search.diagnosis = false;
  run.params.from_reference = true;
  run.params.evaluate = {{"shrink", 8}};
  run.params.state = {.round = 3, .rounds_without_gain = 2, .elapsed_s = 41.5};
  run.params.xla = XlaBaseline{"device", 2e-5, 7e-6, ""};
  run.budget.iterations = 9;
  run.budget.tokens = 5000;
  run.budget.usd = 1.25;
  run.budget.target_speedup = 1.5;
  run.task = {{"form", "infile"}, {"path", "/tmp/k.py"}, {"entry", "candidate"}};
  run.cost = {.tokens_in = 1200,
              .tokens_out = 340,
              .usd = 0.0125,
              .host_seconds = 9.5,
              .evaluations = 7,
              .cache_hits = 2,
              .llm_calls = 3};
  std::string id;
  {
    RunStore store(path());
    id = store.create_run(run);
  }
  const std::optional<RunRecord> back = RunStore(path()).run(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->params.search.strategy, "ucb");
  EXPECT_EQ(back->params.search.beam_size, 5u);
  EXPECT_DOUBLE_EQ(back->params.search.roofline_stop, 0.8);
  EXPECT_FALSE(back->params.search.diagnosis);
  EXPECT_TRUE(back->params.from_reference);
  EXPECT_EQ(back->params.evaluate, json({{"shrink", 8}}));
  EXPECT_EQ(back->params.state, run.params.state);
  EXPECT_EQ(back->params.xla, run.params.xla);
  EXPECT_EQ(back->budget.to_json(), run.budget.to_json());
  EXPECT_EQ(back->task, run.task);
  EXPECT_EQ(back->cost, run.cost);

  // A run without the reference's score or options leaves them out of the stored text.
  RunRecord plain;
  plain.mode = "auto";
  RunStore store(path());
  const std::string plain_id = store.create_run(plain);
  const json params =
      json::parse(stored_text("SELECT params_json FROM runs WHERE id = '" + plain_id + "'"));
  EXPECT_FALSE(params.contains("xla"));
  EXPECT_FALSE(params.contains("evaluate"));
  EXPECT_FALSE(params.contains("start"));
  EXPECT_FALSE(store.run(plain_id)->params.xla);
  EXPECT_TRUE(store.run(plain_id)->cost.empty());
}

TEST_F(TypedRecords, ANodeRoundTripsEveryTypedFieldAndTheWorkersFacts) {
  NodeMetrics m;
  m.correct = true;
  m.time_kind = "device";
  m.candidate_time = TimedSide{1e-5, 0.9e-5, 1.2e-5, 20, 0.8e-5};
  m.reference_time = TimedSide{2e-5, std::nullopt, std::nullopt, 20, std::nullopt};
  m.speedup_vs_reference = 2.0;
  CallPrediction p;
  p.kernel = "_kernel";
  p.label = "predicted (model, v5e)";
  p.predicted_s = 1.1e-5;
  p.compute_s = 1e-7;
  p.memory_s = 9e-6;
  p.overhead_s = 2e-6;
  p.bound = "HBM";
  p.arithmetic_intensity = 0.25;
  p.ridge_intensity = 240;
  p.assumptions = {"one TensorCore walks the whole grid"};
  CallPrediction missing;
  missing.kernel = "_other";
  missing.unavailable = "lowering gave no FLOP count";
  m.predictions = {p, missing};
  m.host = "a";
  Diagnosis d;
  d.bound = "HBM";
  d.summary = "HBM-bound: x_ref re-fetched 8x along grid axis 1";
  d.roofline_s = 4e-6;
  d.roofline_fraction = 0.4;
  d.refetches.push_back({"x_ref", "_kernel", 8, {1}, 1024});
  m.bottleneck = d;
  m.answers = "HBM-bound -> BLOCK_M 128 -> 256";
  m.analysis = {{"bottleneck", "memory"}, {"evidence", "x_ref fetched 8x"}};
  m.facts = {{"pallas_calls", {{{"kernel", "_kernel"}, {"grid", {4, 8}}}}},
             {"seeds", {1, 2, 3}},
             {"timing", {{"config", {{"warmup", 1}}}, {"candidate", {{"iqr_s", 1e-7}}}}}};
  NodeCost cost{
      .tokens_in = 900, .tokens_out = 120, .usd = 0.004, .host_seconds = 3.5, .cache_hit = true};

  RunStore store(path());
  const std::string run_id = store.create_run(RunRecord{});
  NodeRecord node;
  node.run_id = run_id;
  node.status = NodeStatus::correct;
  node.metrics = m;
  node.cost = cost;
  const int64_t id = store.add_node(node);
  const NodeRecord back = *RunStore(path()).node(run_id, id);
  EXPECT_EQ(back.metrics, m) << back.metrics.to_json().dump(1);
  EXPECT_EQ(back.cost, cost);
  ASSERT_TRUE(back.metrics.candidate_time);
  EXPECT_EQ(back.metrics.candidate_time->device_median_s, 0.8e-5);
  EXPECT_EQ(back.metrics.candidate_time->runs, 20);
  ASSERT_EQ(back.metrics.predictions.size(), 2u);
  EXPECT_EQ(back.metrics.predictions[0].assumptions, p.assumptions);
  EXPECT_EQ(back.metrics.predictions[1].unavailable, missing.unavailable);
  EXPECT_EQ(back.metrics.roofline_fraction(), 0.4);
  ASSERT_TRUE(back.metrics.bottleneck);
  ASSERT_EQ(back.metrics.bottleneck->refetches.size(), 1u);
  EXPECT_EQ(back.metrics.bottleneck->refetches[0].along_axes, std::vector<int>{1});
  // The worker's untyped answer is kept beside the typed parts, in the same places.
  EXPECT_EQ(back.metrics.facts["seeds"], json({1, 2, 3}));
  EXPECT_FALSE(back.metrics.facts.contains("analysis"));
  EXPECT_EQ(back.metrics.analysis["evidence"], "x_ref fetched 8x");
  const json stored = json::parse(stored_text("SELECT metrics_json FROM nodes"));
  EXPECT_EQ(stored["timing"]["candidate"]["iqr_s"], 1e-7);
  EXPECT_EQ(stored["timing"]["candidate"]["median_s"], 1e-5);
  EXPECT_EQ(stored["timing"]["candidate"]["device"]["median_s"], 0.8e-5);
  EXPECT_EQ(stored["timing"]["config"]["warmup"], 1);
  EXPECT_EQ(stored["roofline_fraction"], 0.4);
  EXPECT_EQ(stored["bottleneck"]["bound"], "HBM");
}

TEST_F(TypedRecords, AStoreWrittenBeforeTypedRecordsReadsTypedAndKeepsItsText) {
  { RunStore create_tables(path()); }
  raw_exec(fixture("runs_before_typed_records.sql"));
  const auto text_of = [&](const std::string& column, const std::string& where) {
    return stored_text("SELECT " + column + " FROM " + where);
  };
  const std::string run_where = std::string("runs WHERE id = '") + kOldRun + "'";
  const std::string node1_where = std::string("nodes WHERE run_id = '") + kOldRun + "' AND id = 1";
  const std::string node0_where = std::string("nodes WHERE run_id = '") + kOldRun + "' AND id = 0";
  std::map<std::string, std::string> before;
  for (const char* column : {"params_json", "budget_json", "task_json", "cost_json"})
    before[std::string("run ") + column] = text_of(column, run_where);
  for (const char* column : {"metrics_json", "cost_json"}) {
    before[std::string("node1 ") + column] = text_of(column, node1_where);
    before[std::string("node0 ") + column] = text_of(column, node0_where);
  }

  RunStore store(path());
  const std::optional<RunRecord> run = store.run(kOldRun);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->params.search.strategy, "greedy");
  EXPECT_EQ(run->params.search.max_depth, 16);
  EXPECT_EQ(run->params.search.branches, 2u);
  EXPECT_EQ(run->params.state.round, 1);
  EXPECT_NEAR(run->params.state.elapsed_s, 12.78, 0.01);
  ASSERT_TRUE(run->params.xla);
  EXPECT_EQ(run->params.xla->time_kind, "predicted");
  EXPECT_DOUBLE_EQ(*run->params.xla->score_s, 1.3102344322344322e-06);
  EXPECT_DOUBLE_EQ(*run->params.xla->roofline_s, 9.602344322344321e-07);
  EXPECT_FALSE(run->params.from_reference);
  EXPECT_EQ(run->budget.iterations, 1);
  EXPECT_EQ(run->budget.patience, 3);
  EXPECT_EQ(run->task.value("form", ""), "infile");
  EXPECT_EQ(run->cost.evaluations, 3);
  EXPECT_EQ(run->cost.cache_hits, 0);
  EXPECT_NEAR(run->cost.host_seconds, 16.83, 0.01);

  const std::vector<NodeRecord> nodes = store.nodes(kOldRun);
  ASSERT_EQ(nodes.size(), 3u);
  const NodeMetrics& root = nodes[0].metrics;
  EXPECT_EQ(root.correct, true);
  EXPECT_EQ(root.time_kind, "interpret");
  EXPECT_EQ(root.host, "local");
  ASSERT_TRUE(root.candidate_time);
  EXPECT_DOUBLE_EQ(*root.candidate_time->median_s, 0.22572185399985756);
  EXPECT_EQ(root.candidate_time->runs, 1);
  EXPECT_FALSE(root.candidate_time->device_median_s);  // a CPU host has no profiler trace
  ASSERT_TRUE(root.reference_time);
  EXPECT_DOUBLE_EQ(*root.reference_time->p90_s, 0.000289767000140273);
  EXPECT_FALSE(root.speedup_vs_reference);  // stored as null: not timed on a device
  ASSERT_EQ(root.predictions.size(), 1u);
  EXPECT_EQ(root.predictions[0].bound, "grid overhead");
  EXPECT_DOUBLE_EQ(*root.predictions[0].predicted_s, 1.2160234432234432e-05);
  EXPECT_EQ(root.predictions[0].assumptions.size(), 5u);
  ASSERT_TRUE(root.bottleneck);
  EXPECT_EQ(root.bottleneck->bound, "grid overhead");
  EXPECT_NEAR(*root.roofline_fraction(), 0.079, 0.001);
  EXPECT_TRUE(root.answers.empty());
  EXPECT_EQ(root.facts["pallas_calls"][0]["grid"], json({32}));
  EXPECT_EQ(nodes[0].cost, (NodeCost{0, 0, 0, 6.986949671, false}));
  EXPECT_EQ(nodes[1].metrics.answers,
            "grid overhead-bound (8% of the roofline) -> BLOCK_ROWS 8 -> 16");
  EXPECT_NEAR(*nodes[1].metrics.roofline_fraction(), 0.146, 0.001);
  EXPECT_DOUBLE_EQ(nodes[1].cost.host_seconds, 4.085381058);

  // Written back unchanged, every column keeps its text byte for byte; only the root's cost,
  // recorded before a node's LLM fields existed on it, gains them (as zeros).
  store.update_run(*run);
  for (const NodeRecord& n : nodes) store.update_node(n);
  for (const char* column : {"params_json", "budget_json", "task_json", "cost_json"})
    EXPECT_EQ(text_of(column, run_where), before[std::string("run ") + column]) << column;
  EXPECT_EQ(text_of("metrics_json", node1_where), before["node1 metrics_json"]);
  EXPECT_EQ(text_of("cost_json", node1_where), before["node1 cost_json"]);
  EXPECT_EQ(text_of("metrics_json", node0_where), before["node0 metrics_json"]);
  const json root_cost = json::parse(text_of("cost_json", node0_where));
  const json old_root_cost = json::parse(before["node0 cost_json"]);
  for (const auto& [key, value] : old_root_cost.items()) EXPECT_EQ(root_cost[key], value) << key;
  EXPECT_EQ(root_cost["tokens_in"], 0);
}

TEST_F(TypedRecords, ARunColumnThatIsNotAnObjectOrHasAMistypedFieldIsAClearError) {
  RunStore store(path());
  RunRecord run;
  run.id = "r-damaged";
  store.create_run(run);
  raw_exec("UPDATE runs SET cost_json = '{\"evaluations\": 3' WHERE id = 'r-damaged'");
  try {
    store.run("r-damaged");
    FAIL() << "a damaged cost_json was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("run r-damaged: cost_json in the store is not a JSON "
                                         "object"),
              std::string::npos)
        << e.what();
  }
  raw_exec(
      "UPDATE runs SET cost_json = '{}', budget_json = '{\"iterations\": \"eight\"}' "
      "WHERE id = 'r-damaged'");
  try {
    store.run("r-damaged");
    FAIL() << "a mistyped budget was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("run r-damaged: budget_json in the store"),
              std::string::npos)
        << e.what();
  }
}

TEST(HitlPhaseNames, AreTheStoredStringsBothWaysInOrder) {
  const char* names[] = {"plan", "implement", "validate", "test", "autotune", "profile"};
  ASSERT_EQ(hitl_phases().size(), std::size(names));
  for (size_t i = 0; i < std::size(names); ++i) {
    const HitlPhase phase = hitl_phases()[i];
    EXPECT_EQ(to_string(phase), names[i]);
    EXPECT_EQ(hitl_phase_index(phase), i);
    EXPECT_EQ(hitl_phase_from_string(names[i]), phase);
    EXPECT_EQ(parse_hitl_phase(names[i]), phase);
  }
  EXPECT_FALSE(parse_hitl_phase("Plan"));
  EXPECT_FALSE(parse_hitl_phase(""));
}

TEST_F(TypedRecords, EveryHitlPhaseIsStoredByItsName) {
  SessionStore sessions(path());
  for (const HitlPhase phase : hitl_phases()) {
    SessionRecord s = hitl_begin("file:///k.py", "k", 1, "code");
    s.phase = phase;
    hitl_record(s, "note", "");
    const std::string id = sessions.create(s);
    const std::optional<SessionRecord> back = sessions.get(id);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->phase, phase);
    EXPECT_EQ(back->history.back().phase, phase);
    EXPECT_EQ(stored_text("SELECT phase FROM hitl_sessions WHERE id = '" + id + "'"),
              to_string(phase));
    const json history =
        json::parse(stored_text("SELECT history_json FROM hitl_sessions WHERE id = '" + id + "'"));
    EXPECT_EQ(history.back()["phase"], to_string(phase));
  }
}

TEST_F(TypedRecords, AnUnknownStoredHitlPhaseIsRefusedByName) {
  SessionStore sessions(path());
  SessionRecord s = hitl_begin("file:///k.py", "k", 1, "code");
  s.id = "s-odd";
  sessions.create(s);
  raw_exec("UPDATE hitl_sessions SET phase = 'lunch' WHERE id = 's-odd'");
  try {
    sessions.get("s-odd");
    FAIL() << "an unknown phase was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown HITL phase 'lunch'"), std::string::npos)
        << e.what();
  }
  // In the history too: a session is refused, not resumed with a guessed step.
  raw_exec(
      "UPDATE hitl_sessions SET phase = 'test', "
      "history_json = '[{\"phase\":\"Test\",\"event\":\"result\",\"text\":\"\",\"at\":1}]' "
      "WHERE id = 's-odd'");
  try {
    sessions.get("s-odd");
    FAIL() << "an unknown phase in the history was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown HITL phase 'Test'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mk::agents
