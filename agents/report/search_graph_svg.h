// The search graph of a run as an inline SVG tree: depth is the row, each subtree keeps its own
// columns, nodes are coloured by status and link to their section of the report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"

namespace mk::report {

struct GraphPosition {
  int64_t id = 0;
  int row = 0;        // depth in the tree actually stored (not the recorded depth field)
  double column = 0;  // leaves take whole columns; a parent sits over its children's middle
};

// Positions of every node; a node whose parent is missing (or that would close a cycle) is
// drawn as a root of its own.
std::vector<GraphPosition> layout_search_graph(const std::vector<agents::NodeRecord>& nodes);

std::string render_search_graph_svg(const std::vector<agents::NodeRecord>& nodes,
                                    std::optional<int64_t> best_node);

// CSS colour per node status ("correct", "incorrect", "failed", "pending", "evaluating").
std::string status_colour(const std::string& status);

}  // namespace mk::report
