#include "agents/report/report_html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "agents/report/cost_table.h"
#include "agents/report/html.h"
#include "agents/report/line_diff.h"
#include "agents/report/progress_chart.h"
#include "agents/report/search_graph_svg.h"

namespace mk::report {

using nlohmann::json;

namespace {

constexpr const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;
 color:#1b1b1b;padding:0 16px}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;
 text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right}
tr.total td{font-weight:bold;background:#fafafa}
pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px;line-height:1.35}
pre.error{background:#fdecea}.diff .add{background:#e6ffec;display:block}
.diff .del{background:#ffebe9;display:block}.diff .hunk{color:#6f42c1;display:block}
.diff .ctx{display:block}.muted{color:#777}.kind{font-weight:bold;color:#7a4b00}
.graph-wrap{overflow:auto;border:1px solid #eee}
svg.graph text{font:12px monospace;fill:#fff}svg.graph .edge{stroke:#777;stroke-width:1.5}
svg.chart .axis{stroke:#333}svg.chart .baseline{stroke:#aaa;stroke-dasharray:4 3}
svg.chart .series{fill:none;stroke:#1e6fd9;stroke-width:2}svg.chart .point{fill:#1e6fd9}
svg.chart text{font:11px sans-serif;fill:#333}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;color:#fff;border-radius:4px}
section.node{border-top:1px solid #eee;padding-top:4px}
.badge{padding:1px 6px;border-radius:4px;color:#fff;font-size:.85em}
)css";

std::string string_at(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return "";
  const json& value = object[key];
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump();
}

std::string row(const std::string& name, const std::string& escaped_value) {
  return "<tr><th>" + name + "</th><td>" + escaped_value + "</td></tr>\n";
}

std::string badge(const std::string& status) {
  return "<span class=\"badge\" style=\"background:" + status_colour(status) + "\">" +
         html_escape(status) + "</span>";
}

std::string node_link(int64_t id) {
  return "<a href=\"#node-" + std::to_string(id) + "\">#" + std::to_string(id) + "</a>";
}

std::string timing_text(const agents::TimedSide& side) {
  std::string text;
  if (side.median_s) text = format_seconds(*side.median_s) + " median";
  if (side.p10_s && side.p90_s)
    text += " (p10 " + format_seconds(*side.p10_s) + ", p90 " + format_seconds(*side.p90_s) + ")";
  if (side.runs) text += ", " + std::to_string(*side.runs) + " runs";
  return text.empty() ? "-" : text;
}

std::string kind_span(const std::string& text) {
  return " <span class=\"kind\">" + html_escape(text) + "</span>";
}

// What a time of this kind is, said next to every figure: measured on a device, predicted (the
// TPU compiler's cycles or the TPU time model) or a CPU interpret-mode time.
std::string time_kind_text(const std::string& kind, const std::string& target) {
  const std::string generation = target.empty() ? "?" : target;
  if (kind == "device") return "measured on the device";
  if (kind == "compiled") return "predicted (TPU compiler, " + generation + "), not measured";
  if (kind == "predicted") return "predicted (TPU model, " + generation + "), not measured";
  if (kind == "interpret") return "CPU interpret mode: not a TPU time";
  return "unknown time kind";
}

// The XLA reference timed beside a candidate: on the device, or XLA on the CPU when the
// candidate ran in interpret mode (the two are then not a TPU comparison).
std::string reference_kind_text(const std::string& worker_kind, const std::string& target) {
  if (worker_kind == "interpret")
    return "XLA on the CPU, beside CPU interpret mode: not a TPU time";
  return time_kind_text(worker_kind, target);
}

std::string metrics_table(const agents::RunRecord& run, const agents::NodeRecord& node) {
  const agents::NodeMetrics& metrics = node.metrics;
  const json& facts = metrics.facts;
  std::string html = "<table class=\"metrics\">\n";
  if (metrics.correct) html += row("correct", *metrics.correct ? "yes" : "no");
  const std::string time_kind = !node.time_kind.empty() ? node.time_kind : metrics.time_kind;
  if (!time_kind.empty())
    html +=
        row("time kind", html_escape(time_kind) + kind_span(time_kind_text(time_kind, run.target)));
  if (node.score_s)
    html += row("score",
                format_seconds(*node.score_s) + kind_span(time_kind_text(time_kind, run.target)));
  if (node.speedup)
    html += row("speedup vs baseline",
                format_speedup(*node.speedup) + kind_span(speedup_kind_label(run, &node)));
  // The worker's own timing: on the device, or interpret mode on a CPU (never a TPU time).
  const std::string timed = metrics.time_kind;
  if (metrics.candidate_time)
    html += row("candidate time", timing_text(*metrics.candidate_time) +
                                      kind_span(time_kind_text(timed, run.target)));
  if (metrics.reference_time)
    html += row("reference (XLA) time", timing_text(*metrics.reference_time) +
                                            kind_span(reference_kind_text(timed, run.target)));
  if (metrics.speedup_vs_reference && std::isfinite(*metrics.speedup_vs_reference)) {
    const std::string kind = timed == "interpret"
                                 ? "CPU interpret mode vs XLA on the CPU: not a TPU speedup"
                                 : time_kind_text(timed, run.target);
    html += row("speedup vs reference (XLA)",
                format_speedup(*metrics.speedup_vs_reference) + kind_span(kind));
  }
  // The worker's lowering facts: only their kernels' names are shown.
  if (facts.contains("pallas_calls") && facts["pallas_calls"].is_array()) {
    std::string names;
    for (const json& call : facts["pallas_calls"]) {
      const std::string name =
          call.is_string() ? call.get<std::string>() : string_at(call, "kernel");
      if (!name.empty()) names += (names.empty() ? "" : ", ") + html_escape(name);
    }
    html += row("pallas_calls",
                std::to_string(facts["pallas_calls"].size()) + (names.empty() ? "" : ": " + names));
  }
  if (facts.contains("failure") && facts["failure"].is_object()) {
    html += row("failure", html_escape(string_at(facts["failure"], "kind") + ": " +
                                       string_at(facts["failure"], "message")));
  }
  html += "</table>\n";
  if (!metrics.predictions.empty()) {
    html +=
        "<table class=\"predictions\"><tr><th>kernel</th><th>predicted time</th><th>bound</th>"
        "<th>label</th></tr>\n";
    for (const agents::CallPrediction& p : metrics.predictions) {
      html += "<tr><td>" + html_escape(p.kernel) + "</td><td class=\"num\">" +
              (p.predicted_s ? format_seconds(*p.predicted_s) : "-") + "</td><td>" +
              html_escape(p.bound) + "</td><td>" + html_escape(p.label) + "</td></tr>\n";
    }
    html += "</table>\n";
  }
  return html;
}

std::string diff_block(const agents::NodeRecord& parent, const agents::NodeRecord& node) {
  const auto hunks = unified_diff(parent.code, node.code);
  if (hunks.empty()) return "<p class=\"muted\">Same code as " + node_link(parent.id) + ".</p>\n";
  std::string html = "<pre class=\"diff\"><span class=\"hunk\">--- #" + std::to_string(parent.id) +
                     "\n+++ #" + std::to_string(node.id) + "</span>";
  for (const DiffHunk& hunk : hunks) {
    html += "<span class=\"hunk\">" + hunk.header() + "</span>";
    for (const DiffLine& line : hunk.lines) {
      const char* css = line.kind == DiffLine::Kind::Added     ? "add"
                        : line.kind == DiffLine::Kind::Removed ? "del"
                                                               : "ctx";
      const char* mark = line.kind == DiffLine::Kind::Added     ? "+"
                         : line.kind == DiffLine::Kind::Removed ? "-"
                                                                : " ";
      html +=
          std::string("<span class=\"") + css + "\">" + mark + html_escape(line.text) + "</span>";
    }
  }
  return html + "</pre>\n";
}

// What limits the node (the search's diagnosis) and which diagnosis of its parent it answers.
std::string diagnosis_block(const agents::NodeRecord& node) {
  std::string html;
  if (const auto& bottleneck = node.metrics.bottleneck; bottleneck && !bottleneck->summary.empty())
    html +=
        "<h4>Diagnosis</h4>\n<p class=\"diagnosis\">" + html_escape(bottleneck->summary) + "</p>\n";
  if (!node.metrics.answers.empty())
    html += "<p class=\"answers\">Answers the parent's diagnosis: " +
            html_escape(node.metrics.answers) + "</p>\n";
  return html;
}

std::string node_section(const agents::RunRecord& run, const agents::NodeRecord& node,
                         const std::map<int64_t, const agents::NodeRecord*>& by_id, bool best) {
  const std::string id = std::to_string(node.id);
  std::string html = "<section class=\"node\" id=\"node-" + id + "\">\n<h3>#" + id + " " +
                     html_escape(node.strategy) + " " + badge(to_string(node.status)) +
                     (best ? " <span class=\"kind\">\xE2\x98\x85 best</span>" : "") + "</h3>\n";
  html += "<p>";
  if (node.parent)
    html += "parent " + node_link(*node.parent) + " &middot; ";
  else
    html += "baseline &middot; ";
  html += "depth " + std::to_string(node.depth) + " &middot; finished " +
          html_escape(format_utc(node.finished_at)) + "</p>\n";
  if (!node.description.empty()) html += "<p>" + html_escape(node.description) + "</p>\n";
  if (!node.plan.empty())
    html += "<h4>Plan</h4>\n<pre class=\"plan\">" + html_escape(node.plan) + "</pre>\n";
  html += "<h4>Metrics</h4>\n" + metrics_table(run, node);
  html += diagnosis_block(node);
  if (!node.error.empty())
    html += "<h4>Error</h4>\n<pre class=\"error\">" + html_escape(node.error) + "</pre>\n";
  if (node.parent) {
    auto parent = by_id.find(*node.parent);
    html += "<h4>Change against " + node_link(*node.parent) + "</h4>\n";
    html += parent == by_id.end() ? "<p class=\"muted\">The parent is not in the store.</p>\n"
                                  : diff_block(*parent->second, node);
  }
  if (!node.code.empty()) {
    html += "<details><summary>Full code (" + std::to_string(split_lines(node.code).size()) +
            " lines)</summary><pre class=\"code\">" + html_escape(node.code) + "</pre></details>\n";
  }
  return html + "</section>\n";
}

// The newest time the run's record or any of its nodes was written.
int64_t last_update(const agents::RunRecord& run, const std::vector<agents::NodeRecord>& nodes) {
  int64_t newest = std::max(run.updated_at, run.created_at);
  for (const auto& node : nodes) newest = std::max({newest, node.created_at, node.finished_at});
  return newest;
}

// Where the nodes ran, from the worker's run mode of each evaluated node: a device, or a CPU in
// Pallas interpret mode. "not recorded" when no node says.
std::string device_text(const std::vector<agents::NodeRecord>& nodes) {
  std::vector<std::string> seen;
  for (const auto& node : nodes) {
    const json& facts = node.metrics.facts;
    if (!facts.contains("run_mode") || !facts["run_mode"].is_object()) continue;
    const json& mode = facts["run_mode"];
    const std::string platform = string_at(mode, "platform");
    std::string text = platform.empty() ? "?" : platform;
    if (string_at(mode, "mode") == "device")
      text += " (kernels timed on the device)";
    else
      text +=
          " (Pallas interpret mode" +
          (string_at(mode, "interpret_kind").empty() ? std::string()
                                                     : ", " + string_at(mode, "interpret_kind")) +
          "): no kernel ran on a TPU";
    if (!node.metrics.host.empty()) text = node.metrics.host + ": " + text;
    if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
  }
  if (seen.empty()) return "not recorded";
  std::string joined;
  for (const auto& text : seen) joined += (joined.empty() ? "" : "; ") + text;
  return joined;
}

std::string summary_table(const agents::RunRecord& run,
                          const std::vector<agents::NodeRecord>& nodes,
                          const agents::NodeRecord* best) {
  std::map<std::string, int> by_status;
  for (const auto& node : nodes) ++by_status[to_string(node.status)];
  std::string counts;
  for (const auto& [status, count] : by_status)
    counts += (counts.empty() ? "" : ", ") + std::to_string(count) + " " + html_escape(status);
  std::string html = "<table class=\"summary\">\n";
  html += row("file", html_escape(run.file));
  html += row("kernel", run.kernel.empty() ? "(the task's default)" : html_escape(run.kernel));
  html += row("mode", html_escape(run.mode));
  html += row("strategy", html_escape(run.strategy));
  html += row("target", html_escape(run.target));
  html += row("host", html_escape(run.host));
  html += row("device", html_escape(device_text(nodes)));
  html += row("TPU generation",
              run.target.empty()
                  ? "-"
                  : html_escape(run.target) +
                        " <span class=\"muted\">(what predictions and the TPU compiler's cycles "
                        "are for)</span>");
  html += row("llm", html_escape(run.llm.empty() ? "none" : run.llm));
  html += row("status", badge(to_string(run.status)));
  html += row("stop reason", run.stop_reason.empty() ? "-" : html_escape(run.stop_reason));
  html += row("started", html_escape(format_utc(run.created_at)));
  html += row("last update", html_escape(format_utc(last_update(run, nodes))));
  if (!run.params.kernel_written.empty())
    html += row("kernel written",
                "<code>" + html_escape(run.params.kernel_written) + "</code>" +
                    (run.params.kernel_written_node
                         ? " (node " + node_link(*run.params.kernel_written_node) + ")"
                         : std::string()));
  else
    html += row("kernel written", run.params.from_reference
                                      ? "<span class=\"muted\">none (no correct kernel)</span>"
                                      : "<span class=\"muted\">none: the run started from the "
                                        "file above; each node's code is in its section</span>");
  if (const auto& xla = run.params.xla) {
    html += row(
        "XLA reference",
        xla->score_s
            ? format_seconds(*xla->score_s) + kind_span(time_kind_text(xla->time_kind, run.target))
            : "<span class=\"muted\">not scored: " + html_escape(xla->error) + "</span>");
  }
  html += row("nodes", std::to_string(nodes.size()) + (counts.empty() ? "" : " (" + counts + ")"));
  if (best && best->speedup) {
    const std::string kind = speedup_kind_label(run, best);
    std::string value = "<strong>" + format_speedup(*best->speedup) +
                        "</strong> <span class=\"kind\">" + html_escape(kind) + "</span> (node " +
                        node_link(best->id) + ", " + html_escape(best->strategy) + ")";
    if (kind.find("TPU compiler") != std::string::npos)
      value +=
          "<br><span class=\"muted\">Predicted from the TPU compiler's static cycles (libtpu, "
          "no TPU attached), not measured on a device.</span>";
    else if (kind.find("predicted") != std::string::npos)
      value +=
          "<br><span class=\"muted\">Predicted by the TPU time model, not measured on a "
          "device.</span>";
    else if (kind.find("interpret") != std::string::npos)
      value +=
          "<br><span class=\"muted\">Pallas interpret-mode time on a CPU: not a TPU "
          "speedup.</span>";
    html += row("best speedup", value);
    if (const auto& bottleneck = best->metrics.bottleneck;
        bottleneck && !bottleneck->summary.empty())
      html += row("best's diagnosis", html_escape(bottleneck->summary));
  } else {
    html += row("best speedup", "<span class=\"muted\">no correct node yet</span>");
  }
  return html + "</table>\n";
}

bool uses_llm(const agents::RunRecord& run) {
  return !run.llm.empty() && run.llm != "none";
}

}  // namespace

std::optional<int64_t> best_node_id(const agents::RunRecord& run,
                                    const std::vector<agents::NodeRecord>& nodes) {
  if (run.best_node) {
    for (const auto& node : nodes)
      if (node.id == *run.best_node && node.status == agents::NodeStatus::correct && node.speedup)
        return node.id;
  }
  const agents::NodeRecord* best = nullptr;
  for (const auto& node : nodes) {
    if (node.status != agents::NodeStatus::correct || !node.speedup ||
        !std::isfinite(*node.speedup))
      continue;
    if (!best || *node.speedup > *best->speedup) best = &node;
  }
  if (!best) return std::nullopt;
  return best->id;
}

std::string speedup_kind_label(const agents::RunRecord& run, const agents::NodeRecord* node) {
  if (!run.score_kind.empty()) return run.score_kind;
  const std::string kind = node ? node->time_kind : "";
  if (kind == "device") return "measured (device)";
  if (kind == "predicted")
    return "predicted (model, " + (run.target.empty() ? "?" : run.target) + ")";
  if (kind == "compiled")
    return "predicted (TPU compiler, " + (run.target.empty() ? "?" : run.target) + ")";
  if (kind == "interpret") return "interpret (CPU; not a TPU speedup)";
  return "unknown time kind";
}

std::string render_report(const agents::RunRecord& run,
                          const std::vector<agents::NodeRecord>& nodes) {
  std::map<int64_t, const agents::NodeRecord*> by_id;
  for (const auto& node : nodes) by_id.emplace(node.id, &node);
  const std::optional<int64_t> best_id = best_node_id(run, nodes);
  const agents::NodeRecord* best = best_id ? by_id.at(*best_id) : nullptr;
  const std::string title = "MaxKernel run " + run.id;

  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>" + html_escape(title) + "</h1>\n";
  html += "<h2 id=\"summary\">Summary</h2>\n" + summary_table(run, nodes, best);

  html += "<h2 id=\"graph\">Search graph</h2>\n<p class=\"legend\">";
  for (const char* status : {"correct", "incorrect", "failed", "evaluating", "pending"})
    html += std::string("<span style=\"background:") + status_colour(status) + "\">" + status +
            "</span>";
  html +=
      " the best node has a gold border; click a node for its details. Speedups on the "
      "nodes: <span class=\"kind\">" +
      html_escape(speedup_kind_label(run, best)) + "</span>.</p>\n";
  html += "<div class=\"graph-wrap\">" + render_search_graph_svg(nodes, best_id) + "</div>\n";

  const std::string y_label = "best speedup (" + speedup_kind_label(run, best) + ")";
  html += "<h2 id=\"progress\">Best speedup over time</h2>\n" +
          render_step_chart(best_speedup_over_time(run, nodes), "seconds since the start",
                            ChartXUnit::seconds, y_label);
  const bool usd = uses_llm(run) && total_node_cost(nodes).usd > 0;
  html += "<h2 id=\"progress-cost\">Best speedup over cost</h2>\n" +
          render_step_chart(best_speedup_over_cost(nodes, usd),
                            usd ? "cumulative LLM cost (USD)" : "cumulative host seconds",
                            usd ? ChartXUnit::usd : ChartXUnit::seconds, y_label);

  html += "<h2 id=\"cost\">Cost</h2>\n" + render_cost_table(run, nodes);

  html += "<h2 id=\"nodes\">Nodes</h2>\n";
  for (const auto& node : nodes)
    html += node_section(run, node, by_id, best_id && *best_id == node.id);
  html += "<p class=\"muted\">Generated by maxkernel report.</p>\n</body>\n</html>\n";
  return html;
}

}  // namespace mk::report
