#include "agents/orchestration/run_store.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

#include "agents/orchestration/record_ids.h"
#include "knowledge/schema_migrations.h"

namespace mk::agents {

namespace {

// The run tables' migrations (component "runs" in component_schema). Append only.
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

constexpr knowledge::sql::SchemaComponent kRunSchema{"runs", kRunMigrations};

using knowledge::sql::Columns;
using Query = knowledge::sql::Statement;

// The columns bind_run_body / bind_node_body bind, in order.
constexpr const char* kRunBodyColumns =
    "mode, strategy, file, kernel, target, host, llm, params_json, budget_json, status, "
    "stop_reason, task_json, cost_json, score_kind, best_node";
constexpr const char* kNodeBodyColumns =
    "parent, depth, strategy, description, plan, code, code_hash, status, error, metrics_json, "
    "score_s, speedup, time_kind, cost_json";

const std::string kRunColumns = std::string("id, ") + kRunBodyColumns + ", created_at, updated_at";
const std::string kNodeColumns =
    std::string("run_id, id, ") + kNodeBodyColumns + ", created_at, finished_at";

// "a=?, b=?" for the columns "a, b" (an UPDATE's SET list).
std::string assignments(const std::string& columns) {
  std::string out;
  size_t start = 0;
  while (start < columns.size()) {
    size_t end = columns.find(',', start);
    if (end == std::string::npos) end = columns.size();
    out += (out.empty() ? "" : ", ") + columns.substr(start, end - start) + "=?";
    start = columns.find_first_not_of(' ', end + 1);
  }
  return out;
}

// "?,?,?" with one placeholder per column.
std::string placeholders(const std::string& columns) {
  std::string out = "?";
  for (char c : columns)
    if (c == ',') out += ",?";
  return out;
}

// A JSON column's text as the object it holds; "" (never written by this build) is {}. nullopt
// when the text is not a JSON object.
std::optional<nlohmann::json> stored_object(const std::string& text) {
  if (text.empty()) return nlohmann::json::object();
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) return std::nullopt;
  return value;
}

// A run's column: what is not an object is an error (the run's params, budget and totals steer
// its resume; a guess could overspend or restart it).
nlohmann::json run_column(const std::string& run_id, const char* column, const std::string& text) {
  auto value = stored_object(text);
  if (!value)
    throw std::runtime_error("run " + run_id + ": " + column +
                             " in the store is not a JSON object (hand-edited or damaged?)");
  return std::move(*value);
}

// A node's column: what is not an object reads as empty (shown as missing in reports).
nlohmann::json node_column(const NodeRecord& node, const char* column, const std::string& text) {
  auto value = stored_object(text);
  if (value) return std::move(*value);
  spdlog::warn("run store: run {} node {}: {} is not a JSON object; read as empty", node.run_id,
               node.id, column);
  return nlohmann::json::object();
}

RunRecord read_run(Query& q) {
  RunRecord r;
  std::string status, params, budget, task, cost;
  Columns(q) >> r.id >> r.mode >> r.strategy >> r.file >> r.kernel >> r.target >> r.host >> r.llm >>
      params >> budget >> status >> r.stop_reason >> task >> cost >> r.score_kind >> r.best_node >>
      r.created_at >> r.updated_at;
  r.status = run_status_from_string(status);
  const char* column = "params_json";
  try {
    r.params = RunParams::from_json(run_column(r.id, column, params));
    column = "budget_json";
    r.budget = Budget::from_json(run_column(r.id, column, budget));
    column = "task_json";
    r.task = run_column(r.id, column, task);
    column = "cost_json";
    r.cost = RunCost::from_json(run_column(r.id, column, cost));
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw std::runtime_error("run " + r.id + ": " + column + " in the store: " + e.what() +
                             " (hand-edited or damaged?)");
  }
  return r;
}

NodeRecord read_node(Query& q) {
  NodeRecord n;
  std::string status, metrics, cost;
  Columns(q) >> n.run_id >> n.id >> n.parent >> n.depth >> n.strategy >> n.description >> n.plan >>
      n.code >> n.code_hash >> status >> n.error >> metrics >> n.score_s >> n.speedup >>
      n.time_kind >> cost >> n.created_at >> n.finished_at;
  n.status = node_status_from_string(status);
  n.metrics = NodeMetrics::from_json(node_column(n, "metrics_json", metrics));
  n.cost = NodeCost::from_json(node_column(n, "cost_json", cost));
  return n;
}

// The text a JSON column keeps (text the worker or an LLM wrote may hold invalid UTF-8: it is
// replaced, never a failed write).
std::string column_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Every row the query returns, read by `read`.
template <typename Record>
std::vector<Record> all_rows(Query& q, Record (*read)(Query&)) {
  std::vector<Record> out;
  while (q.row()) out.push_back(read(q));
  return out;
}

// Binds kNodeBodyColumns.
void bind_node_body(Query& q, const NodeRecord& node) {
  q.maybe_integer(node.parent).integer(node.depth).text(node.strategy).text(node.description);
  q.text(node.plan).text(node.code).text(node.code_hash).text(to_string(node.status));
  q.text(node.error).text(column_text(node.metrics.to_json()));
  q.maybe_real(node.score_s).maybe_real(node.speedup).text(node.time_kind);
  q.text(column_text(node.cost.to_json()));
}

// Binds kRunBodyColumns.
void bind_run_body(Query& q, const RunRecord& run) {
  q.text(run.mode).text(run.strategy).text(run.file).text(run.kernel).text(run.target);
  q.text(run.host).text(run.llm).text(column_text(run.params.to_json()));
  q.text(column_text(run.budget.to_json())).text(to_string(run.status)).text(run.stop_reason);
  q.text(run.task.is_object() ? column_text(run.task) : "{}").text(column_text(run.cost.to_json()));
  q.text(run.score_kind).maybe_integer(run.best_node);
}

}  // namespace

std::string new_run_id() {
  return timestamped_id('r');
}

RunStore::RunStore(const std::filesystem::path& path) : db_(path, "run store") {
  knowledge::sql::migrate(db_, kRunSchema);
}

std::string RunStore::create_run(RunRecord run) {
  std::lock_guard lock(mutex_);
  if (run.id.empty()) run.id = new_run_id();
  run.created_at = run.updated_at = now_seconds();
  Query q(db_, "INSERT INTO runs (" + kRunColumns + ") VALUES (" + placeholders(kRunColumns) + ")");
  q.text(run.id);
  bind_run_body(q, run);
  q.integer(run.created_at).integer(run.updated_at).run();
  return run.id;
}

void RunStore::update_run(const RunRecord& run) {
  std::lock_guard lock(mutex_);
  Query q(db_, "UPDATE runs SET " + assignments(kRunBodyColumns) + ", updated_at=? WHERE id=?");
  bind_run_body(q, run);
  q.integer(now_seconds()).text(run.id).run();
}

std::optional<RunRecord> RunStore::run(const std::string& id) {
  std::lock_guard lock(mutex_);
  Query q(db_, "SELECT " + kRunColumns + " FROM runs WHERE id = ?");
  q.text(id);
  if (!q.row()) return std::nullopt;
  return read_run(q);
}

std::vector<RunRecord> RunStore::runs(int limit) {
  std::lock_guard lock(mutex_);
  Query q(db_, "SELECT " + kRunColumns + " FROM runs ORDER BY created_at DESC, id DESC LIMIT ?");
  q.integer(limit);
  return all_rows(q, read_run);
}

int64_t RunStore::add_node(NodeRecord node) {
  std::lock_guard lock(mutex_);
  knowledge::sql::Transaction tx(db_);
  {
    Query next(db_, "SELECT COALESCE(MAX(id) + 1, 0) FROM nodes WHERE run_id = ?");
    next.text(node.run_id);
    next.row();
    node.id = next.col_int(0);
  }
  if (node.created_at == 0) node.created_at = now_seconds();
  Query q(db_,
          "INSERT INTO nodes (" + kNodeColumns + ") VALUES (" + placeholders(kNodeColumns) + ")");
  q.text(node.run_id).integer(node.id);
  bind_node_body(q, node);
  q.integer(node.created_at).integer(node.finished_at).run();
  tx.commit();
  return node.id;
}

void RunStore::update_node(const NodeRecord& node) {
  std::lock_guard lock(mutex_);
  Query q(db_, "UPDATE nodes SET " + assignments(kNodeBodyColumns) +
                   ", finished_at=? WHERE run_id=? AND id=?");
  bind_node_body(q, node);
  q.integer(node.finished_at).text(node.run_id).integer(node.id).run();
}

std::optional<NodeRecord> RunStore::node(const std::string& run_id, int64_t id) {
  std::lock_guard lock(mutex_);
  Query q(db_, "SELECT " + kNodeColumns + " FROM nodes WHERE run_id=? AND id=?");
  q.text(run_id).integer(id);
  if (!q.row()) return std::nullopt;
  return read_node(q);
}

std::vector<NodeRecord> RunStore::nodes(const std::string& run_id) {
  std::lock_guard lock(mutex_);
  Query q(db_, "SELECT " + kNodeColumns + " FROM nodes WHERE run_id=? ORDER BY id");
  q.text(run_id);
  return all_rows(q, read_node);
}

std::optional<NodeRecord> RunStore::finished_node_with_hash(const std::string& run_id,
                                                            const std::string& code_hash) {
  std::lock_guard lock(mutex_);
  Query q(db_, "SELECT " + kNodeColumns +
                   " FROM nodes WHERE run_id=? AND code_hash=? AND finished_at > 0 "
                   "AND status IN ('correct','incorrect','failed') ORDER BY id LIMIT 1");
  q.text(run_id).text(code_hash);
  if (!q.row()) return std::nullopt;
  return read_node(q);
}

}  // namespace mk::agents
