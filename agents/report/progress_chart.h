// "Best so far" step charts as inline SVG: the best speedup of a run against time and cost.
#pragma once

#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"

namespace mk::report {

struct ChartPoint {
  double x = 0;
  double y = 0;
};

// Best speedup of correct nodes so far, one point per finished node in finish order; x is the
// seconds since the run started. Unfinished nodes are left out.
std::vector<ChartPoint> best_speedup_over_time(const agents::RunRecord& run,
                                               const std::vector<agents::NodeRecord>& nodes);

// The same against cumulative cost: node host seconds, or USD when `use_usd`.
std::vector<ChartPoint> best_speedup_over_cost(const std::vector<agents::NodeRecord>& nodes,
                                               bool use_usd);

// What the x axis counts: its ticks carry the unit ("30 s", "$0.02"); y ticks are speedups
// ("1.40x").
enum class ChartXUnit { seconds, usd };

// A step line chart with labelled axes and ticks with their units; a placeholder paragraph when
// there are no points.
std::string render_step_chart(const std::vector<ChartPoint>& points, const std::string& x_label,
                              ChartXUnit x_unit, const std::string& y_label);

}  // namespace mk::report
