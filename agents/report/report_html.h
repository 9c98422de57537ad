// The run report: one self-contained HTML page (inline CSS and SVG, no scripts, no external
// resources, a strict Content-Security-Policy) describing a search run and its graph of nodes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"

namespace mk::report {

std::string render_report(const agents::RunRecord& run,
                          const std::vector<agents::NodeRecord>& nodes);

// The node shown as best: the run's best_node when that node is correct, else the correct node
// with the highest speedup (lowest id on ties). Only correct nodes can be best.
std::optional<int64_t> best_node_id(const agents::RunRecord& run,
                                    const std::vector<agents::NodeRecord>& nodes);

// What the run's speedups are: the run's score_kind, else derived from the node's time_kind
// ("measured (device)", "predicted (model, v5e)", "interpret (CPU; not a TPU speedup)").
std::string speedup_kind_label(const agents::RunRecord& run, const agents::NodeRecord* node);

}  // namespace mk::report
