// The HTML report of a real stored run (SQLite in a temp dir): graph, best speedup with its kind,
// diffs, cost totals, and that planted markup only ever appears escaped.
#include "agents/report/report_html.h"

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "agents/report/cost_table.h"
#include "agents/report/html.h"
#include "agents/report/search_graph_svg.h"
#include "demo_run.h"

namespace mk::report {
namespace {

namespace fs = std::filesystem;

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Per process and test: several build trees may run these tests at the same time.
    dir_ = fs::temp_directory_path() /
           ("mk-report-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    store_ = std::make_unique<agents::RunStore>(dir_ / "store.sqlite");
    run_id_ = testing::write_demo_run(*store_);
    run_ = *store_->run(run_id_);
    nodes_ = store_->nodes(run_id_);
    html_ = render_report(run_, nodes_);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  // The text of the element that starts at the first match of `start` up to `end`.
  std::string slice(const std::string& start, const std::string& end) const {
    const size_t from = html_.find(start);
    if (from == std::string::npos) return "";
    const size_t to = html_.find(end, from);
    return html_.substr(from, to == std::string::npos ? std::string::npos : to - from);
  }

  fs::path dir_;
  std::unique_ptr<agents::RunStore> store_;
  std::string run_id_;
  agents::RunRecord run_;
  std::vector<agents::NodeRecord> nodes_;
  std::string html_;
};

TEST_F(ReportTest, IsOneSelfContainedPageWithAStrictPolicy) {
  EXPECT_EQ(html_.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html_.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                       "style-src 'unsafe-inline'; img-src data:\">"),
            std::string::npos);
  EXPECT_EQ(html_.find("https://"), std::string::npos);
  EXPECT_EQ(html_.find("<link"), std::string::npos);
  EXPECT_EQ(html_.find(" src="), std::string::npos);
  EXPECT_NE(html_.find(run_id_), std::string::npos);
}

TEST_F(ReportTest, PlantedScriptAppearsOnlyEscaped) {
  std::string lower = html_;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  EXPECT_EQ(lower.find("<script"), std::string::npos);
  const std::string escaped = html_escape(testing::kPlanted);
  size_t count = 0;
  for (size_t at = html_.find(escaped); at != std::string::npos; at = html_.find(escaped, at + 1))
    ++count;
  // The file name, the plan, the error, and the code line (diff + full code of node 4).
  EXPECT_GE(count, 5u);
}

TEST_F(ReportTest, GraphHasEveryNodeEdgeAndTheBestHighlighted) {
  const std::string svg = slice("<svg class=\"graph\"", "</svg>");
  ASSERT_FALSE(svg.empty());
  for (const auto& node : nodes_) {
    EXPECT_NE(svg.find("data-node=\"" + std::to_string(node.id) + "\""), std::string::npos)
        << node.id;
    EXPECT_NE(svg.find(">#" + std::to_string(node.id) + " "), std::string::npos) << node.id;
    if (node.parent) {
      EXPECT_NE(svg.find("data-edge=\"" + std::to_string(*node.parent) + "-" +
                         std::to_string(node.id) + "\""),
                std::string::npos);
    }
    EXPECT_NE(svg.find("data-status=\"" + to_string(node.status) + "\""), std::string::npos);
  }
  EXPECT_NE(svg.find("<g class=\"node best\" data-node=\"1\""), std::string::npos);
  EXPECT_NE(svg.find(status_colour("failed")), std::string::npos);
}

TEST_F(ReportTest, LayoutPutsDepthInRowsAndParentsOverChildren) {
  const auto layout = layout_search_graph(nodes_);
  ASSERT_EQ(layout.size(), nodes_.size());
  std::map<int64_t, GraphPosition> at;
  for (const auto& p : layout) at[p.id] = p;
  for (const auto& node : nodes_) EXPECT_EQ(at[node.id].row, node.depth) << node.id;
  // Node 1 has children 3 and 4: it sits over their middle; leaves never share a column.
  EXPECT_DOUBLE_EQ(at[1].column, (at[3].column + at[4].column) / 2);
  EXPECT_NE(at[3].column, at[4].column);
  EXPECT_NE(at[4].column, at[5].column);
}

TEST_F(ReportTest, SummaryShowsTheBestSpeedupWithItsKindLabel) {
  const std::string best_row = slice("<tr><th>best speedup</th>", "</tr>");
  ASSERT_FALSE(best_row.empty());
  const auto best =
      std::max_element(nodes_.begin(), nodes_.end(), [](const auto& a, const auto& b) {
        const auto correct = agents::NodeStatus::correct;
        return a.status == correct && b.status == correct ? *a.speedup < *b.speedup
                                                          : b.status == correct;
      });
  EXPECT_NE(best_row.find(format_speedup(*best->speedup)), std::string::npos) << best_row;
  EXPECT_NE(best_row.find(run_.score_kind), std::string::npos) << best_row;
  EXPECT_NE(best_row.find("not measured"), std::string::npos) << best_row;
  EXPECT_NE(html_.find(html_escape(run_.stop_reason)), std::string::npos);
  EXPECT_EQ(best_node_id(run_, nodes_), best->id);
}

TEST_F(ReportTest, BestIsNeverAnIncorrectNode) {
  agents::RunRecord run = run_;
  run.best_node = 2;  // incorrect in the demo
  EXPECT_EQ(best_node_id(run, nodes_), 1);
  run.best_node.reset();
  EXPECT_EQ(best_node_id(run, nodes_), 1);
  run.score_kind.clear();
  EXPECT_EQ(speedup_kind_label(run, &nodes_[1]), "predicted (model, v5e)");
}

TEST_F(ReportTest, NodeSectionsHaveDiffsAgainstTheParent) {
  const std::string node1 = slice("<section class=\"node\" id=\"node-1\">", "</section>");
  ASSERT_FALSE(node1.empty());
  EXPECT_NE(node1.find("<span class=\"hunk\">@@ -"), std::string::npos);
  EXPECT_NE(node1.find("<span class=\"del\">-BLOCK_ROWS = 16</span>"), std::string::npos);
  EXPECT_NE(node1.find("<span class=\"add\">+BLOCK_ROWS = 32</span>"), std::string::npos);
  EXPECT_NE(node1.find("Use 32-row blocks."), std::string::npos);  // the plan
  const std::string node3 = slice("<section class=\"node\" id=\"node-3\">", "</section>");
  EXPECT_NE(node3.find("<pre class=\"error\">lowering: block shape"), std::string::npos);
  EXPECT_NE(node3.find("<span class=\"add\">+BLOCK_ROWS = 12</span>"), std::string::npos);
  const std::string node4 = slice("<section class=\"node\" id=\"node-4\">", "</section>");
  EXPECT_NE(node4.find("<span class=\"add\">+    # " + html_escape(testing::kPlanted)),
            std::string::npos);
  // Every node has a section; the baseline has no diff.
  for (const auto& node : nodes_)
    EXPECT_NE(html_.find("id=\"node-" + std::to_string(node.id) + "\""), std::string::npos);
  const std::string node0 = slice("<section class=\"node\" id=\"node-0\">", "</section>");
  EXPECT_EQ(node0.find("class=\"diff\""), std::string::npos);
}

TEST_F(ReportTest, MetricsTablesShowTimingAndPredictions) {
  const std::string node1 = slice("<section class=\"node\" id=\"node-1\">", "</section>");
  EXPECT_NE(node1.find("<th>candidate time</th>"), std::string::npos);
  EXPECT_NE(node1.find("<th>reference (XLA) time</th><td>" + format_seconds(2.4e-5)),
            std::string::npos);
  EXPECT_NE(node1.find("<td>memory</td>"), std::string::npos);
}

// The text of the table row whose header is `name`, within `html`.
std::string row_in(const std::string& html, const std::string& name) {
  const size_t from = html.find("<tr><th>" + name + "</th>");
  if (from == std::string::npos) return "";
  return html.substr(from, html.find("</tr>", from) - from);
}

TEST_F(ReportTest, EveryTimeSaysItsKindAndInterpretTimesBesideXlaSaySo) {
  const std::string node1 = slice("<section class=\"node\" id=\"node-1\">", "</section>");
  // The worker timed interpret mode on the CPU, and XLA on the CPU beside it.
  EXPECT_NE(row_in(node1, "candidate time").find("CPU interpret mode: not a TPU time"),
            std::string::npos)
      << node1;
  EXPECT_NE(row_in(node1, "reference (XLA) time").find("XLA on the CPU"), std::string::npos)
      << node1;
  // The score the search compares is the TPU model's prediction.
  EXPECT_NE(row_in(node1, "score").find("predicted (TPU model, v5e), not measured"),
            std::string::npos)
      << node1;
  EXPECT_NE(row_in(html_, "XLA reference").find("predicted (TPU model, v5e)"), std::string::npos);
  EXPECT_NE(slice("<p class=\"legend\">", "</p>").find(run_.score_kind), std::string::npos);
  // A node timed on the device says measured, and its XLA time too.
  agents::NodeRecord device = nodes_[1];
  device.metrics.time_kind = "device";
  device.metrics.speedup_vs_reference = 1.2;
  const std::string page = render_report(run_, {nodes_[0], device});
  const std::string section = page.substr(page.find("id=\"node-1\""));
  EXPECT_NE(row_in(section, "reference (XLA) time").find("measured on the device"),
            std::string::npos);
  EXPECT_NE(row_in(section, "speedup vs reference (XLA)").find("measured on the device"),
            std::string::npos);
}

TEST_F(ReportTest, SummaryNamesTheDeviceTheGenerationAndTheNewestUpdate) {
  EXPECT_NE(row_in(html_, "device")
                .find("local: cpu (Pallas interpret mode, hlo): no kernel ran on a TPU"),
            std::string::npos)
      << row_in(html_, "device");
  EXPECT_NE(row_in(html_, "TPU generation").find("v5e"), std::string::npos);
  int64_t newest = 0;
  for (const auto& node : nodes_) newest = std::max(newest, node.finished_at);
  ASSERT_GT(newest, run_.updated_at);  // the nodes were written after the run's record
  EXPECT_NE(row_in(html_, "last update").find(format_utc(newest)), std::string::npos)
      << row_in(html_, "last update");
}

TEST_F(ReportTest, NamesTheKernelTheRunWrote) {
  EXPECT_NE(row_in(html_, "kernel written").find("none"), std::string::npos);
  agents::RunRecord run = run_;
  run.params.kernel_written = "/tmp/kernels/scale_pallas.py";
  run.params.kernel_written_node = 4;
  store_->update_run(run);
  const std::string page = render_report(*store_->run(run_id_), nodes_);
  const std::string written = row_in(page, "kernel written");
  EXPECT_NE(written.find("<code>/tmp/kernels/scale_pallas.py</code>"), std::string::npos)
      << written;
  EXPECT_NE(written.find("href=\"#node-4\""), std::string::npos) << written;
}

TEST_F(ReportTest, ChartTicksCarryTheirUnits) {
  const auto ticks = [&](const std::string& chart) {
    std::vector<std::string> texts;
    for (size_t at = chart.find("class=\"tick\""); at != std::string::npos;
         at = chart.find("class=\"tick\"", at + 1)) {
      const size_t open = chart.find('>', at) + 1;
      texts.push_back(chart.substr(open, chart.find('<', open) - open));
    }
    return texts;
  };
  const auto time_ticks = ticks(slice("<h2 id=\"progress\">", "</svg>"));
  const auto cost_ticks = ticks(slice("<h2 id=\"progress-cost\">", "</svg>"));
  ASSERT_EQ(time_ticks.size(), 6u);
  ASSERT_EQ(cost_ticks.size(), 6u);
  // Ticks alternate x, y: seconds (or USD) on x, speedups on y.
  for (size_t k = 0; k < 6; k += 2) {
    EXPECT_EQ(time_ticks[k].substr(time_ticks[k].size() - 2), " s") << time_ticks[k];
    EXPECT_EQ(cost_ticks[k].front(), '$') << cost_ticks[k];
    EXPECT_EQ(time_ticks[k + 1].back(), 'x') << time_ticks[k + 1];
    EXPECT_EQ(cost_ticks[k + 1].back(), 'x') << cost_ticks[k + 1];
  }
}

TEST_F(ReportTest, CostTableTotalsSumTheNodes) {
  double tokens_in = 0, tokens_out = 0, usd = 0, host_seconds = 0;
  int cache_hits = 0;
  for (const auto& node : nodes_) {
    tokens_in += static_cast<double>(node.cost.tokens_in);
    tokens_out += static_cast<double>(node.cost.tokens_out);
    usd += node.cost.usd;
    host_seconds += node.cost.host_seconds;
    cache_hits += node.cost.cache_hit ? 1 : 0;
  }
  const std::string total = slice("<tr class=\"total\" data-row=\"node-total\">", "</tr>");
  ASSERT_FALSE(total.empty());
  EXPECT_NE(total.find(">" + format_number(tokens_in, 0) + "<"), std::string::npos) << total;
  EXPECT_NE(total.find(">" + format_number(tokens_out, 0) + "<"), std::string::npos) << total;
  EXPECT_NE(total.find(">$" + format_number(usd, 4) + "<"), std::string::npos) << total;
  EXPECT_NE(total.find(">" + format_number(host_seconds, 2) + "<"), std::string::npos) << total;
  EXPECT_NE(total.find("<td>" + std::to_string(cache_hits) + "</td>"), std::string::npos) << total;
  const std::string recorded = slice("<tr class=\"total\" data-row=\"run-total\">", "</tr>");
  EXPECT_NE(recorded.find(std::to_string(run_.cost.evaluations) + " evaluations"),
            std::string::npos);
}

TEST_F(ReportTest, ProgressChartsPlotTheBestSoFar) {
  const std::string time_chart = slice("<h2 id=\"progress\">", "</svg>");
  ASSERT_NE(time_chart.find("<svg class=\"chart\""), std::string::npos);
  // One point per finished node (5 of 6: one is pending).
  size_t points = 0;
  for (size_t at = time_chart.find("<circle"); at != std::string::npos;
       at = time_chart.find("<circle", at + 1))
    ++points;
  EXPECT_EQ(points, 5u);
  // The LLM run plots its cost in USD.
  EXPECT_NE(html_.find("cumulative LLM cost (USD)"), std::string::npos);
}

TEST(ReportEdgeCases, EmptyRunAndBrokenJsonStillRender) {
  agents::RunRecord run;
  run.id = "r-empty";
  const std::string empty = render_report(run, {});
  EXPECT_NE(empty.find("No nodes recorded yet"), std::string::npos);
  EXPECT_NE(empty.find("no correct node yet"), std::string::npos);

  // Nodes whose metrics and cost in the store are not JSON objects (a damaged or hand-edited
  // file) read back as empty ones, and the report still renders them.
  const fs::path dir =
      fs::temp_directory_path() / ("mk-report-broken-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::vector<agents::NodeRecord> nodes;
  {
    agents::RunStore store(dir / "store.sqlite");
    run.id = store.create_run(run);
    agents::NodeRecord odd;
    odd.run_id = run.id;
    odd.parent = 99;  // missing parent: drawn as a root, section says so
    odd.status = agents::NodeStatus::correct;
    odd.speedup = 1.5;
    odd.finished_at = 100;
    odd.metrics.answers = "replaced below";
    odd.cost.usd = 7;
    store.add_node(odd);  // id 0
    agents::NodeRecord loop = odd;
    store.add_node(loop);  // id 1
    loop.id = 1;
    loop.parent = 1;  // a self-loop must not hang the layout
    store.update_node(loop);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "store.sqlite").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE nodes SET metrics_json = '{not json', cost_json = '[1, 2]'",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    nodes = store.nodes(run.id);
  }
  fs::remove_all(dir);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].metrics, agents::NodeMetrics{});
  EXPECT_EQ(nodes[1].cost, agents::NodeCost{});
  const std::string html = render_report(run, nodes);
  EXPECT_NE(html.find("The parent is not in the store."), std::string::npos);
  EXPECT_NE(html.find("data-node=\"0\""), std::string::npos);
  EXPECT_NE(html.find("data-node=\"1\""), std::string::npos);
  EXPECT_NE(html.find("unknown time kind"), std::string::npos);  // no score_kind, no time_kind
}

}  // namespace
}  // namespace mk::report
