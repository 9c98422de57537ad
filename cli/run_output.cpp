#include "cli/run_output.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <utility>

#include "agents/orchestration/score_kind.h"
#include "agents/orchestration/selection.h"
#include "agents/report/report_html.h"

namespace mk::cli {

using nlohmann::json;

namespace {

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
  const std::optional<agents::XlaBaseline>& xla = run.params.xla;
  if (!xla) return std::nullopt;
  const auto speedup =
      agents::same_kind_speedup(xla->score_s, xla->time_kind, best.score_s, best.time_kind);
  if (!speedup) return std::nullopt;
  std::optional<double> roofline;
  if (xla->roofline_s) roofline = *xla->roofline_s / *best.score_s;
  return std::make_pair(*speedup, roofline);
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
              {"cost", run.cost.to_json()},
              {"params", run.params.to_json()},
              {"budget", run.budget.to_json()}};
  const agents::NodeRecord* best = agents::best_node(nodes);
  out["best"] = best ? json{{"node", best->id},
                            {"speedup", *best->speedup},
                            {"strategy", best->strategy},
                            {"description", best->description}}
                     : json();
  if (best) {
    // What limits it (the search's diagnosis), and its share of the task's roofline.
    if (best->metrics.bottleneck) out["best"]["bottleneck"] = best->metrics.bottleneck->to_json();
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
                    {"host", n.metrics.host.empty() ? json() : json(n.metrics.host)},
                    // the parent's diagnosis this node answers ("" when none was used)
                    {"answers", n.metrics.answers},
                    {"finished_at", n.finished_at}});
    // The autotune phase this node went through (its space, counts and best configuration).
    if (const auto t = n.metrics.facts.find("tuning"); t != n.metrics.facts.end())
      list.back()["tuning"] = *t;
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
  const agents::RunCost& cost = run.cost;
  const agents::NodeRecord* best = agents::best_node(nodes);
  if (best) {
    out << "best: node " << best->id << ", " << fixed(*best->speedup, "%.2fx") << " "
        << (run.score_kind.empty() ? "" : run.score_kind);
    if (run.score_kind.rfind("predicted (TPU compiler", 0) == 0)
      out << " (from the TPU compiler's static cycles, without a TPU; correctness checked in "
             "interpret mode, not a measured speedup)";
    else if (run.score_kind.rfind("predicted", 0) == 0)
      out << " (a model prediction for the TPU; correctness checked in interpret mode, not a "
             "measured speedup)";
    out << "\n";
    if (auto vs = versus_xla(run, *best))
      out << "      " << fixed(vs->first, "%.2fx") << " vs XLA (the reference)"
          << (vs->second ? ", " + fixed(100 * *vs->second, "%.0f") + "% of the roofline" : "")
          << "\n";
    if (const auto& bottleneck = best->metrics.bottleneck;
        bottleneck && !bottleneck->summary.empty())
      out << "      diagnosis: " << bottleneck->summary << "\n";
  }
  out << "cost: " << cost.evaluations << " evaluations (" << cost.cache_hits << " from cache), "
      << fixed(cost.host_seconds, "%.1f") << " host s, " << cost.tokens() << " LLM tokens, $"
      << fixed(cost.usd, "%.4f") << "\n";
  if (cost.tuning_evaluations > 0 || cost.tuning_cache_hits > 0)
    out << "tuning: " << cost.tuning_evaluations << " configurations run, "
        << cost.tuning_cache_hits << " from the tuning cache\n";
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
