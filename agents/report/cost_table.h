// What a run cost: per node (LLM tokens and USD, host seconds, cache hits) and in total, from the
// typed records (NodeRecord::cost, RunRecord::cost).
#pragma once

#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"

namespace mk::report {

// The nodes' costs summed: tokens, USD, host seconds and cache hits (evaluations stay 0).
agents::RunCost total_node_cost(const std::vector<agents::NodeRecord>& nodes);

// An HTML table: one row per node, a "total" row (the sum over nodes) and, when the run
// recorded its own totals, a "run totals (recorded)" row with evaluations and cache hits.
std::string render_cost_table(const agents::RunRecord& run,
                              const std::vector<agents::NodeRecord>& nodes);

}  // namespace mk::report
