// Runs and their search graphs, persisted in the store file beside the knowledge tables (own
// tables, own migration list: component "runs" of knowledge/schema_migrations.h). Everything a
// run needs to resume, report and be priced lives here; a killed process loses nothing that was
// recorded.
//
// The records are typed (statuses are enums; params, budget, cost and metrics are structs). The
// store keeps the text it always had (JSON objects in the *_json columns, statuses by name), so
// files written before the records were typed open without a migration. Each JSON column is
// parsed once, when its row is read. A run's JSON that is not an object (hand-edited or damaged)
// is an error naming the run and the column: its params, budget and totals steer a resume. A
// node's metrics or cost that are not JSON read as empty (logged): the report still shows the run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/node_metrics.h"
#include "agents/orchestration/record_status.h"
#include "agents/orchestration/run_cost.h"
#include "agents/orchestration/run_params.h"
#include "agents/orchestration/search_params.h"
#include "knowledge/store_database.h"

namespace mk::agents {

struct RunRecord {
  std::string id;        // "r20261130-051402-3fa2"
  std::string mode;      // "auto" | "graph" | "hitl"
  std::string strategy;  // "greedy" | "parallel" | "beam" | "ucb"
  std::string file;      // absolute path of the kernel file
  std::string kernel;    // entry point ("" = the task's default)
  std::string target;    // TPU generation the scores are for ("v5e")
  std::string host;      // host name ("local")
  std::string llm;       // "none" | "replay:FILE" | "openai:MODEL" ...
  RunParams params;      // search parameters, start, evaluate options, state, XLA score
  Budget budget;         // limits (iterations, seconds, tokens, usd, patience, target)
  RunStatus status = RunStatus::running;
  std::string stop_reason;  // "target speedup reached", "budget: 8 iterations", ...
  // The located task (tpu::locate_task), passed to the worker as it is ({} for a HITL run).
  nlohmann::json task = nlohmann::json::object();
  RunCost cost;            // totals: tokens, usd, host seconds, evaluations, cache hits
  std::string score_kind;  // "measured (device)" | "predicted (model, v5e)"
  std::optional<int64_t> best_node;
  int64_t created_at = 0;  // unix seconds
  int64_t updated_at = 0;
};

struct NodeRecord {
  std::string run_id;
  int64_t id = 0;                 // 0 is the baseline (root)
  std::optional<int64_t> parent;  // nullopt only for the root
  int depth = 0;
  std::string strategy;     // "baseline", "block_sizes", "autotune", "llm:plan", ...
  std::string description;  // one line for people
  std::string plan;         // markdown plan (LLM) or the rule that made it
  std::string code;         // the whole candidate file
  std::string code_hash;    // sha256 of the normalised source: identical candidates run once
  NodeStatus status = NodeStatus::pending;
  std::string error;              // why it failed (lowering error, mismatch, crash), with lines
  NodeMetrics metrics;            // verdict, timing, predictions, diagnosis, worker facts
  std::optional<double> score_s;  // the time the search compares (measured or predicted)
  std::optional<double> speedup;  // baseline score / this score; the root is 1.0
  std::string time_kind;          // "device" | "predicted" | "interpret"
  NodeCost cost;                  // this node's LLM tokens/usd, host seconds, cache hit
  int64_t created_at = 0;
  int64_t finished_at = 0;  // 0 while pending/evaluating
};

class RunStore {
 public:
  // Opens the same database file as knowledge::Store (creating it if needed) and migrates the
  // run tables. Throws std::runtime_error with the path and SQLite's reason.
  explicit RunStore(const std::filesystem::path& path);

  // Creates the run (fills id when empty, created_at/updated_at) and returns its id.
  std::string create_run(RunRecord run);
  void update_run(const RunRecord& run);  // by id; bumps updated_at
  std::optional<RunRecord> run(const std::string& id);
  std::vector<RunRecord> runs(int limit = 50);  // newest first

  // Inserts the node with the next id of its run (ignored field: id) and returns that id.
  int64_t add_node(NodeRecord node);
  void update_node(const NodeRecord& node);  // by (run_id, id)
  std::optional<NodeRecord> node(const std::string& run_id, int64_t id);
  std::vector<NodeRecord> nodes(const std::string& run_id);  // by id
  // A finished (correct/incorrect/failed) node of the run with this hash, if any.
  std::optional<NodeRecord> finished_node_with_hash(const std::string& run_id,
                                                    const std::string& code_hash);

 private:
  knowledge::sql::Database db_;
  std::mutex mutex_;
};

std::string new_run_id();

}  // namespace mk::agents
