// Scoring bench tasks from worker replies: compiled/correct, device-only speedups, fast_p.
#include "agents/report/bench_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace mk::report {
namespace {

using nlohmann::json;

BenchTaskResult from_reply(const std::string& name, const json& body) {
  BenchTaskResult task;
  task.name = name;
  task.candidate = name + "/optimized.py";
  apply_evaluation(task, body.dump());
  return task;
}

json correct_reply(const std::string& time_kind, double candidate_s, double reference_s) {
  json body = {{"ok", true},
               {"correct", true},
               {"time_kind", time_kind},
               {"timing",
                {{"time_kind", time_kind},
                 {"candidate", {{"median_s", candidate_s}}},
                 {"reference", {{"median_s", reference_s}}}}}};
  body["speedup"] = time_kind == "device" ? json(reference_s / candidate_s) : json();
  return body;
}

const json kWrong = {{"ok", true},
                     {"correct", false},
                     {"time_kind", "interpret"},
                     {"timing", nullptr},
                     {"failure", {{"kind", "mismatch"}, {"message", "seed 7: output 0 differs"}}}};
const json kLoweringError = {
    {"ok", false}, {"error", {{"kind", "lowering"}, {"message", "block shape (12, 128)"}}}};

TEST(BenchSummary, InterpretTimeIsNeverASpeedup) {
  const auto task = from_reply("a", correct_reply("interpret", 0.02, 1e-5));
  EXPECT_TRUE(task.compiled);
  EXPECT_TRUE(task.correct);
  EXPECT_FALSE(task.speedup.has_value());
  EXPECT_EQ(speedup_cell(task), "n/a (interpret)");
  ASSERT_TRUE(task.candidate_median_s.has_value());
  EXPECT_DOUBLE_EQ(*task.candidate_median_s, 0.02);
}

TEST(BenchSummary, WrongAndFailedCandidates) {
  const auto wrong = from_reply("w", kWrong);
  EXPECT_TRUE(wrong.compiled);
  EXPECT_FALSE(wrong.correct);
  EXPECT_EQ(wrong.failure, "mismatch: seed 7: output 0 differs");
  EXPECT_EQ(speedup_cell(wrong), "n/a (incorrect)");
  const auto failed = from_reply("f", kLoweringError);
  EXPECT_FALSE(failed.compiled);
  EXPECT_FALSE(failed.correct);
  EXPECT_EQ(failed.failure, "lowering: block shape (12, 128)");
  const auto runtime = from_reply("r", {{"ok", false}, {"error", {{"kind", "runtime"}}}});
  EXPECT_TRUE(runtime.compiled);  // it compiled, then raised while running
  BenchTaskResult garbage;
  apply_evaluation(garbage, "not json");
  EXPECT_TRUE(garbage.evaluated);
  EXPECT_FALSE(garbage.compiled);
  EXPECT_FALSE(garbage.failure.empty());
}

TEST(BenchSummary, CpuSuiteHasFastZeroOnly) {
  std::vector<BenchTaskResult> tasks = {from_reply("a", correct_reply("interpret", 0.02, 1e-5)),
                                        from_reply("b", correct_reply("interpret", 0.03, 1e-5)),
                                        from_reply("c", kWrong)};
  BenchTaskResult skipped;
  skipped.name = "no_candidate";
  tasks.push_back(skipped);
  const BenchSummary s = summarize_bench(tasks);
  EXPECT_EQ(s.tasks, 3);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_EQ(s.compiled, 3);
  EXPECT_EQ(s.correct, 2);
  EXPECT_FALSE(s.geomean_speedup.has_value());
  EXPECT_FALSE(s.speedup_note.empty());
  ASSERT_EQ(s.fast_p.size(), 4u);
  EXPECT_DOUBLE_EQ(s.fast_p[0].p, 0.0);
  ASSERT_TRUE(s.fast_p[0].fraction.has_value());
  EXPECT_DOUBLE_EQ(*s.fast_p[0].fraction, 2.0 / 3.0);
  for (size_t k = 1; k < s.fast_p.size(); ++k) EXPECT_FALSE(s.fast_p[k].fraction) << k;
}

TEST(BenchSummary, DeviceSuiteHasGeomeanAndFastP) {
  // Speedups 2.0, 0.5 and 1.25; one more task wrong.
  const std::vector<BenchTaskResult> tasks = {from_reply("a", correct_reply("device", 1.0, 2.0)),
                                              from_reply("b", correct_reply("device", 2.0, 1.0)),
                                              from_reply("c", correct_reply("device", 0.8, 1.0)),
                                              from_reply("d", kWrong)};
  EXPECT_EQ(speedup_cell(tasks[0]), "2.00x");
  const BenchSummary s = summarize_bench(tasks);
  ASSERT_TRUE(s.geomean_speedup.has_value());
  EXPECT_NEAR(*s.geomean_speedup, std::cbrt(2.0 * 0.5 * 1.25), 1e-12);
  EXPECT_TRUE(s.speedup_note.empty());
  const double expected[] = {3.0 / 4, 2.0 / 4, 1.0 / 4, 0.0};  // > 0, > 1, > 1.5, > 2
  for (size_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(s.fast_p[k].fraction.has_value()) << k;
    EXPECT_DOUBLE_EQ(*s.fast_p[k].fraction, expected[k]) << k;
  }
}

TEST(BenchSummary, DeviceSpeedupFromMediansWhenTheWorkerGaveNone) {
  json body = correct_reply("device", 0.5, 1.0);
  body.erase("speedup");
  const auto task = from_reply("a", body);
  ASSERT_TRUE(task.speedup.has_value());
  EXPECT_DOUBLE_EQ(*task.speedup, 2.0);
}

TEST(BenchSummary, EmptySuite) {
  const BenchSummary s = summarize_bench({});
  EXPECT_EQ(s.tasks, 0);
  for (const auto& f : s.fast_p) EXPECT_FALSE(f.fraction.has_value());
}

}  // namespace
}  // namespace mk::report
