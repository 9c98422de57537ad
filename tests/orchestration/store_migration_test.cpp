// One migration scheme for the whole store file (knowledge/schema_migrations.h): a file laid out
// by the builds before it (knowledge tables counted in PRAGMA user_version, run and session
// tables in component_schema) opens with every row kept and is recorded under the new scheme; no
// file is migrated twice; a file from a newer schema is refused and left as it is.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "agents/orchestration/run_store.h"
#include "agents/orchestration/session_store.h"
#include "knowledge/store.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;

// The store file exactly as the builds before the single scheme left it: the knowledge tables'
// four migrations with PRAGMA user_version = 4, and the run and HITL session tables with their
// component_schema rows, each with some data.
constexpr const char* kLegacyStoreSql = R"sql(
CREATE TABLE eval_cache (key TEXT PRIMARY KEY, host_fingerprint TEXT NOT NULL,
  result_json TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE model_checks (kernel_key TEXT NOT NULL, generation TEXT NOT NULL,
  predicted_s REAL NOT NULL, measured_s REAL NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE documents (id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('bundled', 'user')), content_hash TEXT NOT NULL,
  added_at INTEGER NOT NULL);
CREATE TABLE chunks (id INTEGER PRIMARY KEY,
  document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, heading TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX chunks_by_document ON chunks(document_id);
CREATE VIRTUAL TABLE chunks_fts USING fts5(heading, body, tokenize = 'porter unicode61');
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE lessons (id INTEGER PRIMARY KEY, kernel_class TEXT NOT NULL, strategy TEXT NOT NULL,
  target TEXT NOT NULL, effect REAL NOT NULL, run_id TEXT NOT NULL, notes TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE INDEX lessons_by_class ON lessons(kernel_class, target);
PRAGMA user_version = 4;

CREATE TABLE component_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE runs (
  id TEXT PRIMARY KEY, mode TEXT NOT NULL, strategy TEXT NOT NULL, file TEXT NOT NULL,
  kernel TEXT NOT NULL, target TEXT NOT NULL, host TEXT NOT NULL, llm TEXT NOT NULL,
  params_json TEXT NOT NULL, budget_json TEXT NOT NULL, status TEXT NOT NULL,
  stop_reason TEXT NOT NULL, task_json TEXT NOT NULL, cost_json TEXT NOT NULL,
  score_kind TEXT NOT NULL, best_node INTEGER, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL);
CREATE TABLE nodes (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, id INTEGER NOT NULL,
  parent INTEGER, depth INTEGER NOT NULL, strategy TEXT NOT NULL, description TEXT NOT NULL,
  plan TEXT NOT NULL, code TEXT NOT NULL, code_hash TEXT NOT NULL, status TEXT NOT NULL,
  error TEXT NOT NULL, metrics_json TEXT NOT NULL, score_s REAL, speedup REAL,
  time_kind TEXT NOT NULL, cost_json TEXT NOT NULL, created_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL, PRIMARY KEY (run_id, id));
CREATE INDEX nodes_by_hash ON nodes(run_id, code_hash);
INSERT INTO component_schema VALUES ('runs', 1);
CREATE TABLE hitl_sessions (
  id TEXT PRIMARY KEY, uri TEXT NOT NULL, kernel TEXT NOT NULL,
  start_version INTEGER NOT NULL, doc_version INTEGER NOT NULL, phase TEXT NOT NULL,
  status TEXT NOT NULL, history_json TEXT NOT NULL, code TEXT NOT NULL,
  proposed TEXT NOT NULL, plan TEXT NOT NULL, summary TEXT NOT NULL, feedback TEXT NOT NULL,
  run_id TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX hitl_sessions_by_update ON hitl_sessions(updated_at);
INSERT INTO component_schema VALUES ('hitl', 1);

INSERT INTO eval_cache VALUES ('old-key', 'cpu', '{"ok": true}', 10);
INSERT INTO model_checks VALUES ('kern', 'v5e', 2.0, 4.0, 11);
INSERT INTO documents VALUES (1, 'notes/tiling.md', 'Tiling notes', 'user', 'h1', 12);
INSERT INTO chunks VALUES (1, 1, 0, 'Tiles', 'Pick tiles that divide the matrix.');
INSERT INTO chunks_fts (rowid, heading, body)
  VALUES (1, 'Tiling notes > Tiles', 'Pick tiles that divide the matrix.');
INSERT INTO lessons VALUES (1, 'matmul', 'bigger tiles', 'v5e', 1.5, 'r-old', 'kept', 13);
INSERT INTO runs VALUES ('r-old', 'graph', 'beam', '/k.py', 'kernel', 'v5e', 'local', 'none',
  '{"search":{"beam_size":2}}', '{"iterations":8}', 'done', 'budget: 8 iterations',
  '{"name":"k"}', '{"tokens_in":12,"usd":0.5}', 'measured (device)', 1, 100, 200);
INSERT INTO nodes VALUES ('r-old', 0, NULL, 0, 'baseline', 'the kernel as written', '', 'code0',
  'hash0', 'correct', '', '{"timing":{"candidate":{"median_s":2.0}}}', 2.0, 1.0, 'device', '{}',
  100, 110);
INSERT INTO nodes VALUES ('r-old', 1, 0, 1, 'block_sizes', 'bigger blocks', 'plan', 'code1',
  'hash1', 'correct', '', '{"timing":{"candidate":{"median_s":1.0}}}', 1.0, 2.0, 'device',
  '{"host_seconds":3}', 120, 130);
INSERT INTO hitl_sessions VALUES ('s-old', 'file:///k.py', 'kernel', 3, 5, 'implement', 'awaiting',
  '[{"phase":"plan","event":"approved","text":"ok","at":150}]', 'code', 'proposed', 'the plan',
  'summary', 'feedback', 'r-old', 140, 160);
)sql";

class StoreMigration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mk-migration-" + std::to_string(::getpid()) + "-" +
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

  std::map<std::string, int> recorded_versions() {
    std::map<std::string, int> out;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT component, version FROM component_schema", -1, &stmt,
                                 nullptr),
              SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW)
      out[reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))] =
          sqlite3_column_int(stmt, 1);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
  }

  // From here on any write to component_schema fails: opening again must not migrate.
  void forbid_recording_a_migration() {
    raw_exec(
        "CREATE TRIGGER no_second_insert BEFORE INSERT ON component_schema "
        "BEGIN SELECT RAISE(ABORT, 'migrated twice'); END;"
        "CREATE TRIGGER no_second_update BEFORE UPDATE ON component_schema "
        "BEGIN SELECT RAISE(ABORT, 'migrated twice'); END;");
  }

  std::string file_bytes() {
    std::ifstream in(path(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  fs::path dir_;
};

void expect_legacy_rows(const fs::path& path) {
  knowledge::Store store(path);
  EXPECT_EQ(store.cached_evaluation("old-key").value_or(""), "{\"ok\": true}");
  EXPECT_EQ(store.cached_evaluation_count(), 1);
  const auto accuracy = store.model_accuracy("v5e");
  EXPECT_EQ(accuracy.checks, 1);
  EXPECT_DOUBLE_EQ(accuracy.mean_abs_relative_error, 0.5);
  EXPECT_EQ(store.document_count(knowledge::SearchFilter::Kind::user), 1);
  const auto lessons = store.lessons_for("matmul", "v5e", 10);
  ASSERT_EQ(lessons.size(), 1u);
  EXPECT_EQ(lessons[0].strategy, "bigger tiles");
  EXPECT_EQ(lessons[0].run_id, "r-old");
  EXPECT_DOUBLE_EQ(lessons[0].effect, 1.5);

  RunStore runs(path);
  const auto run = runs.run("r-old");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->strategy, "beam");
  EXPECT_EQ(run->status, RunStatus::done);
  EXPECT_EQ(run->stop_reason, "budget: 8 iterations");
  EXPECT_EQ(run->params.search.beam_size, 2u);
  EXPECT_EQ(run->budget.iterations, 8);
  EXPECT_EQ(run->task, nlohmann::json({{"name", "k"}}));
  EXPECT_EQ(run->cost.tokens_in, 12);
  EXPECT_DOUBLE_EQ(run->cost.usd, 0.5);
  EXPECT_EQ(run->best_node, 1);
  EXPECT_EQ(run->created_at, 100);
  EXPECT_EQ(run->updated_at, 200);
  const auto nodes = runs.nodes("r-old");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_FALSE(nodes[0].parent);
  EXPECT_EQ(nodes[1].parent, 0);
  EXPECT_EQ(nodes[1].strategy, "block_sizes");
  EXPECT_EQ(nodes[1].status, NodeStatus::correct);
  EXPECT_EQ(nodes[1].code, "code1");
  EXPECT_EQ(nodes[1].speedup, 2.0);
  ASSERT_TRUE(nodes[1].metrics.candidate_time);
  EXPECT_EQ(nodes[1].metrics.candidate_time->median_s, 1.0);
  EXPECT_DOUBLE_EQ(nodes[1].cost.host_seconds, 3);
  EXPECT_EQ(nodes[1].finished_at, 130);
  EXPECT_TRUE(runs.finished_node_with_hash("r-old", "hash1"));

  SessionStore sessions(path);
  const auto s = sessions.get("s-old");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->phase, HitlPhase::implement);
  EXPECT_EQ(s->status, SessionStatus::awaiting);
  EXPECT_EQ(s->doc_version, 5);
  EXPECT_EQ(s->proposed, "proposed");
  EXPECT_EQ(s->run_id, "r-old");
  ASSERT_EQ(s->history.size(), 1u);
  EXPECT_EQ(s->history[0].event, "approved");
  EXPECT_EQ(s->history[0].phase, HitlPhase::plan);
  EXPECT_EQ(s->history[0].at, 150);
}

TEST_F(StoreMigration, AFileFromTheOlderSchemesKeepsEveryRowAndIsRecordedOnce) {
  raw_exec(kLegacyStoreSql);
  expect_legacy_rows(path());  // the first open migrates
  {
    knowledge::Store store(path());
    EXPECT_EQ(store.schema_version(), knowledge::Store::latest_schema_version());
  }
  const auto versions = recorded_versions();
  EXPECT_EQ(versions.at("knowledge"), knowledge::Store::latest_schema_version());
  EXPECT_EQ(versions.at("runs"), 1);
  EXPECT_EQ(versions.at("hitl"), 1);

  forbid_recording_a_migration();
  expect_legacy_rows(path());  // opens without writing component_schema again
  EXPECT_EQ(recorded_versions(), versions);
}

TEST_F(StoreMigration, AFileMadeByThisSchemeIsNotMigratedAgain) {
  {
    RunStore runs(path());  // the run tables first: the knowledge tables join a file that has
    SessionStore sessions(path());  // component_schema but no user_version
    knowledge::Store store(path());
    RunRecord run;
    run.mode = "graph";
    run.status = RunStatus::running;
    runs.create_run(run);
    store.store_evaluation("k", "cpu", "{}");
  }
  const auto versions = recorded_versions();
  EXPECT_EQ(versions.at("knowledge"), knowledge::Store::latest_schema_version());
  EXPECT_EQ(versions.size(), 3u);

  forbid_recording_a_migration();
  knowledge::Store store(path());
  RunStore runs(path());
  SessionStore sessions(path());
  EXPECT_EQ(store.cached_evaluation_count(), 1);
  EXPECT_EQ(runs.runs().size(), 1u);
  EXPECT_EQ(store.schema_version(), knowledge::Store::latest_schema_version());
}

TEST_F(StoreMigration, AFileFromANewerSchemaIsRefusedAndLeftAsItIs) {
  { RunStore runs(path()); }
  raw_exec("UPDATE component_schema SET version = 99 WHERE component = 'runs'");
  const std::string before = file_bytes();
  try {
    RunStore runs(path());
    FAIL() << "a newer schema was opened";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path().string()), std::string::npos) << what;
    EXPECT_NE(what.find("runs tables are at schema version 99, newer than this build"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("left as it is"), std::string::npos) << what;
  }
  EXPECT_EQ(file_bytes(), before);
  EXPECT_EQ(recorded_versions().at("runs"), 99);
}

TEST_F(StoreMigration, AKnowledgeVersionNewerThanThisBuildInUserVersionIsRefused) {
  raw_exec("PRAGMA journal_mode=WAL; PRAGMA user_version = 99");  // as every store file is
  const std::string before = file_bytes();
  EXPECT_THROW(
      {
        try {
          knowledge::Store store(path());
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("knowledge tables are at schema version 99"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      std::runtime_error);
  EXPECT_EQ(file_bytes(), before);
}

}  // namespace
}  // namespace mk::agents
