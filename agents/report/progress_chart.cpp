#include "agents/report/progress_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "agents/report/html.h"

namespace mk::report {

namespace {

constexpr double kWidth = 560, kHeight = 240;
constexpr double kLeft = 60, kRight = 20, kTop = 16, kBottom = 44;

std::vector<const agents::NodeRecord*> finished_in_order(
    const std::vector<agents::NodeRecord>& nodes) {
  std::vector<const agents::NodeRecord*> finished;
  for (const auto& node : nodes)
    if (node.finished_at > 0) finished.push_back(&node);
  std::stable_sort(finished.begin(), finished.end(), [](const auto* a, const auto* b) {
    return a->finished_at != b->finished_at ? a->finished_at < b->finished_at : a->id < b->id;
  });
  return finished;
}

// What the node spent of the chart's measure (LLM USD or host seconds); never negative.
double cost_of(const agents::NodeRecord& node, bool use_usd) {
  const double value = use_usd ? node.cost.usd : node.cost.host_seconds;
  return std::isfinite(value) && value > 0 ? value : 0;
}

// Appends the best-so-far point; nodes that are not correct keep the previous best.
void push_best(std::vector<ChartPoint>& points, double x, const agents::NodeRecord& node,
               double& best) {
  if (node.status == agents::NodeStatus::correct && node.speedup && std::isfinite(*node.speedup))
    best = std::max(best, *node.speedup);
  if (best > 0) points.push_back({x, best});
}

std::string tick_label(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude != 0 && (magnitude < 0.01 || magnitude >= 1e5)) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2g", value);
    return buffer;
  }
  return format_number(value, magnitude < 10 ? 2 : 0);
}

std::string x_tick_label(double value, ChartXUnit unit) {
  return unit == ChartXUnit::usd ? "$" + tick_label(value) : tick_label(value) + " s";
}

std::string y_tick_label(double value) {
  return tick_label(value) + "x";
}

}  // namespace

std::vector<ChartPoint> best_speedup_over_time(const agents::RunRecord& run,
                                               const std::vector<agents::NodeRecord>& nodes) {
  std::vector<ChartPoint> points;
  double best = 0;
  const auto finished = finished_in_order(nodes);
  const int64_t start = run.created_at > 0 ? run.created_at
                        : finished.empty() ? 0
                                           : finished.front()->finished_at;
  for (const auto* node : finished)
    push_best(points, static_cast<double>(std::max<int64_t>(node->finished_at - start, 0)), *node,
              best);
  return points;
}

std::vector<ChartPoint> best_speedup_over_cost(const std::vector<agents::NodeRecord>& nodes,
                                               bool use_usd) {
  std::vector<ChartPoint> points;
  double best = 0, spent = 0;
  for (const auto* node : finished_in_order(nodes)) {
    spent += cost_of(*node, use_usd);
    push_best(points, spent, *node, best);
  }
  return points;
}

std::string render_step_chart(const std::vector<ChartPoint>& points, const std::string& x_label,
                              ChartXUnit x_unit, const std::string& y_label) {
  if (points.empty())
    return "<p class=\"muted\">No correct finished nodes yet: nothing to plot.</p>";
  double x_max = 0, y_max = 0, y_min = points.front().y;
  for (const auto& p : points) {
    x_max = std::max(x_max, p.x);
    y_max = std::max(y_max, p.y);
    y_min = std::min(y_min, p.y);
  }
  if (x_max <= 0) x_max = 1;
  // Keep 1.0 (the baseline) in view and leave head room above the best.
  y_min = std::min(y_min, 1.0) * 0.9;
  y_max = y_max * 1.1;
  if (y_max - y_min < 1e-9) y_max = y_min + 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto sx = [&](double x) { return kLeft + x / x_max * plot_w; };
  auto sy = [&](double y) { return kTop + (1 - (y - y_min) / (y_max - y_min)) * plot_h; };

  std::string svg = "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    format_number(kWidth, 0) + "\" height=\"" + format_number(kHeight, 0) +
                    "\" viewBox=\"0 0 " + format_number(kWidth, 0) + " " +
                    format_number(kHeight, 0) + "\" role=\"img\" aria-label=\"" +
                    html_escape(y_label + " over " + x_label) + "\">\n";
  // Axes with three ticks each.
  svg += "<line class=\"axis\" x1=\"" + format_number(kLeft, 0) + "\" y1=\"" +
         format_number(kTop + plot_h, 0) + "\" x2=\"" + format_number(kLeft + plot_w, 0) +
         "\" y2=\"" + format_number(kTop + plot_h, 0) + "\"/>";
  svg += "<line class=\"axis\" x1=\"" + format_number(kLeft, 0) + "\" y1=\"" +
         format_number(kTop, 0) + "\" x2=\"" + format_number(kLeft, 0) + "\" y2=\"" +
         format_number(kTop + plot_h, 0) + "\"/>\n";
  for (int k = 0; k <= 2; ++k) {
    const double xv = x_max * k / 2, yv = y_min + (y_max - y_min) * k / 2;
    svg += "<text class=\"tick\" x=\"" + format_number(sx(xv), 1) + "\" y=\"" +
           format_number(kTop + plot_h + 16, 1) + "\" text-anchor=\"middle\">" +
           x_tick_label(xv, x_unit) + "</text>";
    svg += "<text class=\"tick\" x=\"" + format_number(kLeft - 6, 1) + "\" y=\"" +
           format_number(sy(yv) + 4, 1) + "\" text-anchor=\"end\">" + y_tick_label(yv) + "</text>";
  }
  svg += "<text class=\"label\" x=\"" + format_number(kLeft + plot_w / 2, 1) + "\" y=\"" +
         format_number(kHeight - 6, 1) + "\" text-anchor=\"middle\">" + html_escape(x_label) +
         "</text>";
  svg += "<text class=\"label\" x=\"14\" y=\"" + format_number(kTop + plot_h / 2, 1) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " +
         format_number(kTop + plot_h / 2, 1) + ")\">" + html_escape(y_label) + "</text>\n";
  // Baseline 1.0 as a dashed reference line.
  if (1.0 >= y_min && 1.0 <= y_max) {
    svg += "<line class=\"baseline\" x1=\"" + format_number(kLeft, 0) + "\" y1=\"" +
           format_number(sy(1.0), 1) + "\" x2=\"" + format_number(kLeft + plot_w, 0) + "\" y2=\"" +
           format_number(sy(1.0), 1) + "\"/>\n";
  }
  std::string path;
  for (size_t k = 0; k < points.size(); ++k) {
    if (k > 0)
      path += " " + format_number(sx(points[k].x), 1) + "," + format_number(sy(points[k - 1].y), 1);
    path += " " + format_number(sx(points[k].x), 1) + "," + format_number(sy(points[k].y), 1);
  }
  svg += "<polyline class=\"series\" points=\"" + path.substr(1) + "\"/>\n";
  for (const auto& p : points) {
    svg += "<circle class=\"point\" cx=\"" + format_number(sx(p.x), 1) + "\" cy=\"" +
           format_number(sy(p.y), 1) + "\" r=\"3\"><title>" + x_tick_label(p.x, x_unit) + ": " +
           format_speedup(p.y) + "</title></circle>";
  }
  svg += "\n</svg>";
  return svg;
}

}  // namespace mk::report
