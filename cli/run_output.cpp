#include "cli/run_output.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <utility>

#include "agents/orchestration/selection.h"
#include "agents/report/report_html.h"

namespace mk::cli {

using nlohmann::json;

namespace {

json parse_or_empty(const std::string& text) {
  json j = json::parse(text.empty() ? "{}" : text, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

std::string fixed(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string one_line(std::string s, size_t max) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

// The best node against XLA, and the fraction of the roofline it reaches, when the run
// recorded the reference's score of the same kind (a kernel start; for a reference start the
// speedup already is vs XLA).
std::optional<std::pair<double, std::optional<double>>> versus_xla(const agents::RunRecord& run,
                                                                   const agents::NodeRecord& best) {
  const json xla = parse_or_empty(run.params_json).value("xla", json::object());
  if (!best.score_s || *best.score_s <= 0 || !xla.contains("score_s") ||
      xla.value("time_kind", std::string()) != best.time_kind)
    return std::nullopt;
  std::optional<double> roofline;
  if (xla.contains("roofline_s")) roofline = xla["roofline_s"].get<double>() / *best.score_s;
  return std::make_pair(xla["score_s"].get<double>() / *best.score_s, roofline);
}

}  // namespace

json run_json(const agents::RunRecord& run, const std::vector<agents::NodeRecord>& nodes,
              const std::string& report_file) {
  json out = {{"run", run.id},
              {"mode", run.mode},
              {"strategy", run.strategy},
              {"file", run.file},
              {"kernel", run.kernel},
              {"target", run.target},
              {"host", run.host},
              {"llm", run.llm},
              {"status", to_string(run.status)},
              {"stop_reason", run.stop_reason},
              {"score_kind", run.score_kind},
              {"cost", parse_or_empty(run.cost_json)},
              {"params", parse_or_empty(run.params_json)},
              {"budget", parse_or_empty(run.budget_json)}};
  const agents::NodeRecord* best = agents::best_node(nodes);
  out["best"] = best ? json{{"node", best->id},
                            {"speedup", *best->speedup},
                            {"strategy", best->strategy},
                            {"description", best->description}}
                     : json();
  if (best) {
    // What limits it (the search's diagnosis), and its share of the task's roofline.
    const json metrics = parse_or_empty(best->metrics_json);
    if (metrics.contains("bottleneck")) out["best"]["bottleneck"] = metrics["bottleneck"];
    if (auto vs = versus_xla(run, *best)) {
      out["best"]["speedup_vs_xla"] = vs->first;
      out["best"]["roofline_fraction"] = vs->second ? json(*vs->second) : json();
    }
  }
  json list = json::array();
  for (const agents::NodeRecord& n : nodes) {
    list.push_back({{"id", n.id},
                    {"parent", n.parent ? json(*n.parent) : json()},
                    {"depth", n.depth},
                    {"strategy", n.strategy},
                    {"description", n.description},
                    {"status", to_string(n.status)},
                    {"error", n.error},
                    {"speedup", n.speedup ? json(*n.speedup) : json()},
                    {"score_s", n.score_s ? json(*n.score_s) : json()},
                    {"time_kind", n.time_kind},
                    {"code_hash", n.code_hash},
                    // the host that evaluated it (of a pool: the one it went to)
                    {"host", parse_or_empty(n.metrics_json).value("host", json())},
                    // the parent's diagnosis this node answers ("" when none was used)
                    {"answers", parse_or_empty(n.metrics_json).value("answers", "")},
                    {"finished_at", n.finished_at}});
  }
  out["nodes"] = list;
  if (!report_file.empty()) out["report"] = report_file;
  return out;
}

void print_run_summary(std::ostream& out, const agents::RunRecord& run,
                       const std::vector<agents::NodeRecord>& nodes,
                       const std::string& report_file) {
  out << "run " << run.id << " (" << run.mode << ", " << run.strategy << ") "
      << to_string(run.status);
  if (!run.stop_reason.empty()) out << ": " << run.stop_reason;
  out << "\n";
  std::vector<const agents::NodeRecord*> order;
  for (const auto& n : nodes) order.push_back(&n);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    const double sa = a->speedup.value_or(-1), sb = b->speedup.value_or(-1);
    return sa > sb;
  });
  out << "  node parent  status      speedup  strategy         change\n";
  for (const agents::NodeRecord* n : order) {
    char row[160];
    std::snprintf(
        row, sizeof row, "  %4lld %6s  %-10s  %7s  %-15s  ", static_cast<long long>(n->id),
        n->parent ? std::to_string(*n->parent).c_str() : "-", to_string(n->status).c_str(),
        n->speedup ? fixed(*n->speedup, "%.2fx").c_str() : "-", n->strategy.c_str());
    out << row
        << one_line(n->status == agents::NodeStatus::correct || n->error.empty()
                        ? n->description
                        : n->description + " | " + n->error,
                    90)
        << "\n";
  }
  const json cost = parse_or_empty(run.cost_json);
  const agents::NodeRecord* best = agents::best_node(nodes);
  if (best) {
    out << "best: node " << best->id << ", " << fixed(*best->speedup, "%.2fx") << " "
        << (run.score_kind.empty() ? "" : run.score_kind);
    if (run.score_kind.rfind("predicted", 0) == 0)
      out << " (a model prediction for the TPU; correctness checked in interpret mode, not a "
             "measured speedup)";
    out << "\n";
    if (auto vs = versus_xla(run, *best))
      out << "      " << fixed(vs->first, "%.2fx") << " vs XLA (the reference)"
          << (vs->second ? ", " + fixed(100 * *vs->second, "%.0f") + "% of the roofline" : "")
          << "\n";
    const json bottleneck = parse_or_empty(best->metrics_json).value("bottleneck", json::object());
    if (bottleneck.contains("summary"))
      out << "      diagnosis: " << bottleneck.value("summary", std::string()) << "\n";
  }
  out << "cost: " << cost.value("evaluations", 0) << " evaluations (" << cost.value("cache_hits", 0)
      << " from cache), " << fixed(cost.value("host_seconds", 0.0), "%.1f") << " host s, "
      << cost.value("tokens_in", int64_t{0}) + cost.value("tokens_out", int64_t{0})
      << " LLM tokens, $" << fixed(cost.value("usd", 0.0), "%.4f") << "\n";
  if (!report_file.empty()) out << "report: " << report_file << "\n";
}

void print_run_list(std::ostream& out, const std::vector<agents::RunRecord>& runs, bool as_json) {
  if (as_json) {
    json list = json::array();
    for (const auto& r : runs)
      list.push_back({{"run", r.id},
                      {"mode", r.mode},
                      {"strategy", r.strategy},
                      {"file", r.file},
                      {"status", to_string(r.status)},
                      {"stop_reason", r.stop_reason},
                      {"best_node", r.best_node ? json(*r.best_node) : json()}});
    out << list.dump(2) << "\n";
    return;
  }
  for (const auto& r : runs)
    out << r.id << "  " << r.mode << "/" << r.strategy << "  " << to_string(r.status) << "  "
        << r.file << (r.stop_reason.empty() ? "" : "  (" + r.stop_reason + ")") << "\n";
}

bool write_run_report(const agents::RunRecord& run, const std::vector<agents::NodeRecord>& nodes,
                      const std::string& path, std::string& error) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    error = "cannot write " + path;
    return false;
  }
  file << report::render_report(run, nodes);
  if (!file.flush()) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace mk::cli
