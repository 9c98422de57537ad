#include "agents/report/cost_table.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "agents/report/html.h"

namespace mk::report {

using nlohmann::json;

namespace {

double number_or_zero(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return 0;
  const json& value = object[key];
  if (value.is_boolean()) return value.get<bool>() ? 1 : 0;
  if (!value.is_number()) return 0;
  const double number = value.get<double>();
  return std::isfinite(number) && number > 0 ? number : 0;
}

std::string cells(const CostTotals& cost) {
  return "<td class=\"num\">" + format_number(cost.tokens_in, 0) + "</td><td class=\"num\">" +
         format_number(cost.tokens_out, 0) + "</td><td class=\"num\">$" +
         format_number(cost.usd, 4) + "</td><td class=\"num\">" +
         format_number(cost.host_seconds, 2) + "</td>";
}

}  // namespace

CostTotals node_cost(const agents::NodeRecord& node) {
  const json cost = json::parse(node.cost_json, nullptr, false);
  CostTotals totals;
  totals.tokens_in = number_or_zero(cost, "tokens_in");
  totals.tokens_out = number_or_zero(cost, "tokens_out");
  totals.usd = number_or_zero(cost, "usd");
  totals.host_seconds = number_or_zero(cost, "host_seconds");
  totals.cache_hits = number_or_zero(cost, "cache_hit") > 0 ? 1 : 0;
  return totals;
}

CostTotals total_node_cost(const std::vector<agents::NodeRecord>& nodes) {
  CostTotals sum;
  for (const auto& node : nodes) {
    const CostTotals cost = node_cost(node);
    sum.tokens_in += cost.tokens_in;
    sum.tokens_out += cost.tokens_out;
    sum.usd += cost.usd;
    sum.host_seconds += cost.host_seconds;
    sum.cache_hits += cost.cache_hits;
  }
  return sum;
}

std::string render_cost_table(const agents::RunRecord& run,
                              const std::vector<agents::NodeRecord>& nodes) {
  std::string html =
      "<table class=\"cost\">\n<tr><th>node</th><th>strategy</th><th>tokens in</th>"
      "<th>tokens out</th><th>USD</th><th>host s</th><th>cache hit</th></tr>\n";
  for (const auto& node : nodes) {
    const CostTotals cost = node_cost(node);
    html += "<tr><td><a href=\"#node-" + std::to_string(node.id) + "\">#" +
            std::to_string(node.id) + "</a></td><td>" + html_escape(node.strategy) + "</td>" +
            cells(cost) + "<td>" + (cost.cache_hits ? "yes" : "") + "</td></tr>\n";
  }
  const CostTotals sum = total_node_cost(nodes);
  html += "<tr class=\"total\" data-row=\"node-total\"><td>total</td><td>" +
          std::to_string(nodes.size()) + " nodes</td>" + cells(sum) + "<td>" +
          std::to_string(sum.cache_hits) + "</td></tr>\n";
  const json recorded = json::parse(run.cost_json, nullptr, false);
  if (recorded.is_object() && !recorded.empty()) {
    CostTotals run_cost;
    run_cost.tokens_in = number_or_zero(recorded, "tokens_in");
    run_cost.tokens_out = number_or_zero(recorded, "tokens_out");
    run_cost.usd = number_or_zero(recorded, "usd");
    run_cost.host_seconds = number_or_zero(recorded, "host_seconds");
    html += "<tr class=\"total\" data-row=\"run-total\"><td>run totals (recorded)</td><td>" +
            format_number(number_or_zero(recorded, "evaluations"), 0) + " evaluations</td>" +
            cells(run_cost) + "<td>" + format_number(number_or_zero(recorded, "cache_hits"), 0) +
            "</td></tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace mk::report
