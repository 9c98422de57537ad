// What a run cost: per node (LLM tokens and USD, host seconds, cache hits) and in total, as
// recorded in NodeRecord.cost_json / RunRecord.cost_json (every field optional).
#pragma once

#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"

namespace mk::report {

struct CostTotals {
  double tokens_in = 0;
  double tokens_out = 0;
  double usd = 0;
  double host_seconds = 0;
  int cache_hits = 0;
};

CostTotals node_cost(const agents::NodeRecord& node);
CostTotals total_node_cost(const std::vector<agents::NodeRecord>& nodes);

// An HTML table: one row per node, a "total" row (the sum over nodes) and, when the run
// recorded its own totals, a "run totals (recorded)" row with evaluations and cache hits.
std::string render_cost_table(const agents::RunRecord& run,
                              const std::vector<agents::NodeRecord>& nodes);

}  // namespace mk::report
