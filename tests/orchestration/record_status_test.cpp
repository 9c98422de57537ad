// Run, node and session statuses are enums in memory and the same strings as ever in the store
// file (older files, the Python tests and the editors read the column values).
#include "agents/orchestration/record_status.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "agents/orchestration/run_store.h"
#include "agents/orchestration/session_store.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;

fs::path status_store(const std::string& name) {
  const auto dir =
      fs::temp_directory_path() / ("mk-status-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir / "store.sqlite";
}

// The column value as a plain SQLite connection (a Python test, an older build) reads it.
std::string stored_text(const fs::path& path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  std::string out;
  if (sqlite3_step(stmt) == SQLITE_ROW)
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

void raw_exec(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

// Each value in declaration order has the stored name at the same place in `names`.
template <typename Enum, typename Parse>
void expect_names_both_ways(Parse parse, std::initializer_list<const char*> names) {
  int value = 0;
  for (const char* name : names) {
    const auto status = static_cast<Enum>(value++);
    EXPECT_EQ(to_string(status), name);
    EXPECT_EQ(parse(name), status) << name;
  }
}

TEST(RecordStatus, NamesAreTheStoredStringsBothWays) {
  expect_names_both_ways<RunStatus>(run_status_from_string,
                                    {"running", "done", "stopped", "failed", "cancelled"});
  expect_names_both_ways<NodeStatus>(node_status_from_string,
                                     {"pending", "evaluating", "correct", "incorrect", "failed"});
  expect_names_both_ways<SessionStatus>(session_status_from_string,
                                        {"running", "awaiting", "done", "stopped", "failed"});
}

TEST(RecordStatus, EveryStatusRoundTripsThroughTheStoreAsItsName) {
  const auto path = status_store("roundtrip");
  RunStore runs(path);
  SessionStore sessions(path);
  for (RunStatus status : {RunStatus::running, RunStatus::done, RunStatus::stopped,
                           RunStatus::failed, RunStatus::cancelled}) {
    RunRecord run;
    run.mode = "graph";
    run.status = status;
    const std::string id = runs.create_run(run);
    EXPECT_EQ(runs.run(id)->status, status);
    EXPECT_EQ(stored_text(path, "SELECT status FROM runs WHERE id = '" + id + "'"),
              to_string(status));
  }
  const std::string run_id = runs.create_run(RunRecord{});
  for (NodeStatus status : {NodeStatus::pending, NodeStatus::evaluating, NodeStatus::correct,
                            NodeStatus::incorrect, NodeStatus::failed}) {
    NodeRecord node;
    node.run_id = run_id;
    node.status = status;
    const int64_t id = runs.add_node(node);
    EXPECT_EQ(runs.node(run_id, id)->status, status);
    EXPECT_EQ(stored_text(path, "SELECT status FROM nodes WHERE id = " + std::to_string(id)),
              to_string(status));
  }
  for (SessionStatus status : {SessionStatus::running, SessionStatus::awaiting, SessionStatus::done,
                               SessionStatus::stopped, SessionStatus::failed}) {
    SessionRecord session;
    session.status = status;
    const std::string id = sessions.create(session);
    EXPECT_EQ(sessions.get(id)->status, status);
    EXPECT_EQ(stored_text(path, "SELECT status FROM hitl_sessions WHERE id = '" + id + "'"),
              to_string(status));
  }
}

TEST(RecordStatus, AnUnknownStoredStatusIsAClearErrorNotAGuess) {
  const auto path = status_store("unknown");
  RunStore runs(path);
  RunRecord run;
  run.id = "r-odd";
  runs.create_run(run);
  raw_exec(path, "UPDATE runs SET status = 'finished' WHERE id = 'r-odd'");
  try {
    runs.run("r-odd");
    FAIL() << "an unknown status was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown run status 'finished'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(node_status_from_string("done"), std::runtime_error);
  EXPECT_THROW(session_status_from_string(""), std::runtime_error);
}

}  // namespace
}  // namespace mk::agents
