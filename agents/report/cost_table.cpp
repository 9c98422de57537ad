#include "agents/report/cost_table.h"

#include <cmath>

#include "agents/report/html.h"

namespace mk::report {

namespace {

// A figure as shown: a negative or non-finite one (only a hand-edited store holds one) is 0.
double shown(double value) {
  return std::isfinite(value) && value > 0 ? value : 0;
}

std::string cells(double tokens_in, double tokens_out, double usd, double host_seconds) {
  return "<td class=\"num\">" + format_number(shown(tokens_in), 0) + "</td><td class=\"num\">" +
         format_number(shown(tokens_out), 0) + "</td><td class=\"num\">$" +
         format_number(shown(usd), 4) + "</td><td class=\"num\">" +
         format_number(shown(host_seconds), 2) + "</td>";
}

std::string cells(const agents::RunCost& cost) {
  return cells(static_cast<double>(cost.tokens_in), static_cast<double>(cost.tokens_out), cost.usd,
               cost.host_seconds);
}

}  // namespace

agents::RunCost total_node_cost(const std::vector<agents::NodeRecord>& nodes) {
  agents::RunCost sum;
  for (const auto& node : nodes) {
    sum.tokens_in += node.cost.tokens_in;
    sum.tokens_out += node.cost.tokens_out;
    sum.usd += node.cost.usd;
    sum.host_seconds += node.cost.host_seconds;
    if (node.cost.cache_hit) ++sum.cache_hits;
  }
  return sum;
}

std::string render_cost_table(const agents::RunRecord& run,
                              const std::vector<agents::NodeRecord>& nodes) {
  std::string html =
      "<table class=\"cost\">\n<tr><th>node</th><th>strategy</th><th>tokens in</th>"
      "<th>tokens out</th><th>USD</th><th>host s</th><th>cache hit</th></tr>\n";
  for (const auto& node : nodes) {
    const agents::NodeCost& cost = node.cost;
    html += "<tr><td><a href=\"#node-" + std::to_string(node.id) + "\">#" +
            std::to_string(node.id) + "</a></td><td>" + html_escape(node.strategy) + "</td>" +
            cells(static_cast<double>(cost.tokens_in), static_cast<double>(cost.tokens_out),
                  cost.usd, cost.host_seconds) +
            "<td>" + (cost.cache_hit ? "yes" : "") + "</td></tr>\n";
  }
  const agents::RunCost sum = total_node_cost(nodes);
  html += "<tr class=\"total\" data-row=\"node-total\"><td>total</td><td>" +
          std::to_string(nodes.size()) + " nodes</td>" + cells(sum) + "<td>" +
          std::to_string(sum.cache_hits) + "</td></tr>\n";
  if (!run.cost.empty()) {
    html += "<tr class=\"total\" data-row=\"run-total\"><td>run totals (recorded)</td><td>" +
            format_number(shown(run.cost.evaluations), 0) + " evaluations</td>" + cells(run.cost) +
            "<td>" + format_number(shown(run.cost.cache_hits), 0) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace mk::report
