#include "agents/orchestration/run_store.h"

#include "agents/orchestration/sqlite_component.h"

#include <sqlite3.h>

#include <stdexcept>

namespace mk::agents {

namespace {

// The run tables' own migrations, tracked in component_schema so they never collide with the
// knowledge store's user_version list. Append only.
const char* const kRunMigrations[] = {
    R"sql(
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
    )sql",
};

using sql::now_seconds;
using sql::Query;

Query query(sqlite3* db, const std::string& statement) {
  return Query(db, statement, "run store");
}

constexpr const char* kRunColumns =
    "id, mode, strategy, file, kernel, target, host, llm, params_json, budget_json, status, "
    "stop_reason, task_json, cost_json, score_kind, best_node, created_at, updated_at";

RunRecord read_run(Query& q) {
  RunRecord r;
  r.id = q.col_text(0);
  r.mode = q.col_text(1);
  r.strategy = q.col_text(2);
  r.file = q.col_text(3);
  r.kernel = q.col_text(4);
  r.target = q.col_text(5);
  r.host = q.col_text(6);
  r.llm = q.col_text(7);
  r.params_json = q.col_text(8);
  r.budget_json = q.col_text(9);
  r.status = q.col_text(10);
  r.stop_reason = q.col_text(11);
  r.task_json = q.col_text(12);
  r.cost_json = q.col_text(13);
  r.score_kind = q.col_text(14);
  r.best_node = q.col_maybe_int(15);
  r.created_at = q.col_int(16);
  r.updated_at = q.col_int(17);
  return r;
}

constexpr const char* kNodeColumns =
    "run_id, id, parent, depth, strategy, description, plan, code, code_hash, status, error, "
    "metrics_json, score_s, speedup, time_kind, cost_json, created_at, finished_at";

NodeRecord read_node(Query& q) {
  NodeRecord n;
  n.run_id = q.col_text(0);
  n.id = q.col_int(1);
  n.parent = q.col_maybe_int(2);
  n.depth = static_cast<int>(q.col_int(3));
  n.strategy = q.col_text(4);
  n.description = q.col_text(5);
  n.plan = q.col_text(6);
  n.code = q.col_text(7);
  n.code_hash = q.col_text(8);
  n.status = q.col_text(9);
  n.error = q.col_text(10);
  n.metrics_json = q.col_text(11);
  n.score_s = q.col_maybe_real(12);
  n.speedup = q.col_maybe_real(13);
  n.time_kind = q.col_text(14);
  n.cost_json = q.col_text(15);
  n.created_at = q.col_int(16);
  n.finished_at = q.col_int(17);
  return n;
}

std::string json_or_empty_object(const std::string& s) {
  return s.empty() ? "{}" : s;
}

// Binds a node's columns from parent to cost_json, in kNodeColumns order.
void bind_node_body(Query& q, const NodeRecord& node) {
  q.maybe_integer(node.parent)
      .integer(node.depth)
      .text(node.strategy)
      .text(node.description)
      .text(node.plan)
      .text(node.code)
      .text(node.code_hash)
      .text(node.status)
      .text(node.error)
      .text(json_or_empty_object(node.metrics_json))
      .maybe_real(node.score_s)
      .maybe_real(node.speedup)
      .text(node.time_kind)
      .text(json_or_empty_object(node.cost_json));
}

// Binds every run column but id, created_at and updated_at, in kRunColumns order.
void bind_run_body(Query& q, const RunRecord& run) {
  q.text(run.mode)
      .text(run.strategy)
      .text(run.file)
      .text(run.kernel)
      .text(run.target)
      .text(run.host)
      .text(run.llm)
      .text(json_or_empty_object(run.params_json))
      .text(json_or_empty_object(run.budget_json))
      .text(run.status)
      .text(run.stop_reason)
      .text(json_or_empty_object(run.task_json))
      .text(json_or_empty_object(run.cost_json))
      .text(run.score_kind)
      .maybe_integer(run.best_node);
}

}  // namespace

std::string new_run_id() {
  return sql::timestamped_id('r');
}

RunStore::RunStore(const std::filesystem::path& path) : path_(path) {
  db_ = sql::open_database(path, "run store");
  try {
    migrate();
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

RunStore::~RunStore() {
  sqlite3_close(db_);
}

void RunStore::exec(const char* statement) {
  sql::exec(db_, statement, "run store " + path_.string());
}

void RunStore::migrate() {
  sql::migrate_component(db_, "runs", kRunMigrations, std::size(kRunMigrations),
                         "run store " + path_.string());
}

std::string RunStore::create_run(RunRecord run) {
  std::lock_guard lock(mutex_);
  if (run.id.empty()) run.id = new_run_id();
  run.created_at = run.updated_at = now_seconds();
  Query q = query(db_, (std::string("INSERT INTO runs (") + kRunColumns +
                        ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
                           .c_str());
  q.text(run.id);
  bind_run_body(q, run);
  q.integer(run.created_at).integer(run.updated_at).run();
  return run.id;
}

void RunStore::update_run(const RunRecord& run) {
  std::lock_guard lock(mutex_);
  Query q =
      query(db_,
            "UPDATE runs SET mode=?, strategy=?, file=?, kernel=?, target=?, host=?, llm=?, "
            "params_json=?, budget_json=?, status=?, stop_reason=?, task_json=?, cost_json=?, "
            "score_kind=?, best_node=?, updated_at=? WHERE id=?");
  bind_run_body(q, run);
  q.integer(now_seconds()).text(run.id).run();
}

std::optional<RunRecord> RunStore::run(const std::string& id) {
  std::lock_guard lock(mutex_);
  Query q = query(db_, (std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?").c_str());
  q.text(id);
  if (!q.row()) return std::nullopt;
  return read_run(q);
}

std::vector<RunRecord> RunStore::runs(int limit) {
  std::lock_guard lock(mutex_);
  Query q = query(db_, (std::string("SELECT ") + kRunColumns +
                        " FROM runs ORDER BY created_at DESC, id DESC LIMIT ?")
                           .c_str());
  q.integer(limit);
  std::vector<RunRecord> out;
  while (q.row()) out.push_back(read_run(q));
  return out;
}

int64_t RunStore::add_node(NodeRecord node) {
  std::lock_guard lock(mutex_);
  exec("BEGIN IMMEDIATE");
  try {
    {
      Query next = query(db_, "SELECT COALESCE(MAX(id) + 1, 0) FROM nodes WHERE run_id = ?");
      next.text(node.run_id);
      next.row();
      node.id = next.col_int(0);
    }
    if (node.created_at == 0) node.created_at = now_seconds();
    Query q = query(db_, (std::string("INSERT INTO nodes (") + kNodeColumns +
                          ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
                             .c_str());
    q.text(node.run_id).integer(node.id);
    bind_node_body(q, node);
    q.integer(node.created_at).integer(node.finished_at).run();
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return node.id;
}

void RunStore::update_node(const NodeRecord& node) {
  std::lock_guard lock(mutex_);
  Query q =
      query(db_,
            "UPDATE nodes SET parent=?, depth=?, strategy=?, description=?, plan=?, code=?, "
            "code_hash=?, status=?, error=?, metrics_json=?, score_s=?, speedup=?, time_kind=?, "
            "cost_json=?, finished_at=? WHERE run_id=? AND id=?");
  bind_node_body(q, node);
  q.integer(node.finished_at).text(node.run_id).integer(node.id).run();
}

std::optional<NodeRecord> RunStore::node(const std::string& run_id, int64_t id) {
  std::lock_guard lock(mutex_);
  Query q = query(
      db_, (std::string("SELECT ") + kNodeColumns + " FROM nodes WHERE run_id=? AND id=?").c_str());
  q.text(run_id).integer(id);
  if (!q.row()) return std::nullopt;
  return read_node(q);
}

std::vector<NodeRecord> RunStore::nodes(const std::string& run_id) {
  std::lock_guard lock(mutex_);
  Query q =
      query(db_, std::string("SELECT ") + kNodeColumns + " FROM nodes WHERE run_id=? ORDER BY id");
  q.text(run_id);
  std::vector<NodeRecord> out;
  while (q.row()) out.push_back(read_node(q));
  return out;
}

std::optional<NodeRecord> RunStore::finished_node_with_hash(const std::string& run_id,
                                                            const std::string& code_hash) {
  std::lock_guard lock(mutex_);
  Query q = query(db_, (std::string("SELECT ") + kNodeColumns +
                        " FROM nodes WHERE run_id=? AND code_hash=? AND finished_at > 0 "
                        "AND status IN ('correct','incorrect','failed') ORDER BY id LIMIT 1")
                           .c_str());
  q.text(run_id).text(code_hash);
  if (!q.row()) return std::nullopt;
  return read_node(q);
}

}  // namespace mk::agents
