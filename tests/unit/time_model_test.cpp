// The analytical time model and the store's record of how well it predicts.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "knowledge/store.h"
#include "knowledge/time_model.h"
#include "source/syntax/normalize.h"
#include "tpu/jobs/predictions.h"

namespace mk::knowledge {
namespace {

const TpuGeneration& v5e() {
  return *find_tpu_generation("v5e");
}

TEST(TimeModel, MemoryBoundKernelIsBytesOverBandwidth) {
  KernelCostFacts f;
  f.flops = 1e6;
  f.hbm_bytes = 1e9;  // ~1.2 ms at 819 GB/s
  f.grid_steps = 8;
  f.compute_dtype = "float32";
  auto p = predict_time(f, v5e());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->bound, "memory");
  EXPECT_NEAR(p->memory_seconds, 1e9 / *v5e().hbm_bandwidth_bytes_per_s, 1e-12);
  EXPECT_NEAR(p->seconds, p->memory_seconds, 1e-12);  // the steps' fixed cost overlaps
  EXPECT_EQ(p->label, "predicted (model, v5e)");
}

TEST(TimeModel, ComputeBoundUsesTheDtypesPeak) {
  KernelCostFacts f;
  f.flops = 2.0 * 8192 * 8192 * 8192;
  f.hbm_bytes = 3.0 * 8192 * 8192 * 2;
  f.grid_steps = 512;
  f.compute_dtype = "bfloat16";
  auto bf16 = predict_time(f, v5e());
  ASSERT_TRUE(bf16);
  EXPECT_EQ(bf16->bound, "compute");
  EXPECT_NEAR(bf16->compute_seconds, f.flops / v5e().peak_flops_per_s.at("bf16"), 1e-9);
  f.compute_dtype = "int8";
  auto int8 = predict_time(f, v5e());
  EXPECT_LT(int8->compute_seconds, bf16->compute_seconds);  // v5e's int8 peak is twice bf16's
  EXPECT_GT(bf16->arithmetic_intensity, bf16->ridge_intensity);
}

TEST(TimeModel, TinyGridsAreOverheadBound) {
  KernelCostFacts f;
  f.flops = 100;
  f.hbm_bytes = 1000;
  f.grid_steps = 1000;
  f.compute_dtype = "float32";
  EXPECT_EQ(predict_time(f, v5e())->bound, "grid overhead");
}

// The JAX Pallas TPU matmul guide's v5e table (bf16): 128-blocks at 8192^3 measured 91.8 ms, at
// 4096^3 11.77 ms; 512/1024/1024 blocks at 8192^3 6.10 ms. The model must stay within 10% on all
// three (bench/RESULTS.md, "TPU compiler" calibration).
TEST(TimeModel, PallasGuideV5eRowsWithinTenPercent) {
  struct Row {
    double n, bm, bk, bn, measured_s;
  };
  for (const Row r : {Row{8192, 128, 128, 128, 91.8e-3}, Row{4096, 128, 128, 128, 11.77e-3},
                      Row{8192, 512, 1024, 1024, 6.10e-3}}) {
    KernelCostFacts f;
    f.flops = 2 * r.n * r.n * r.n;
    const double steps = (r.n / r.bm) * (r.n / r.bn) * (r.n / r.bk);
    // Each step fetches an A and a B block (bf16); C is written once.
    f.hbm_bytes = steps * (r.bm * r.bk + r.bk * r.bn) * 2 + r.n * r.n * 2;
    f.grid_steps = steps;
    f.compute_dtype = "bfloat16";
    const auto p = predict_time(f, v5e());
    ASSERT_TRUE(p);
    EXPECT_LT(std::abs(model_error(p->seconds, r.measured_s)), 0.10)
        << r.n << "^3 with " << r.bm << " blocks: " << p->seconds << " s";
  }
}

TEST(TimeModel, PredictionsFromWorkerFactsNeedCostAndTraffic) {
  const nlohmann::json calls = nlohmann::json::parse(R"([
    {"kernel": "k", "cost": {"flops": 16384},
     "traffic": {"available": true, "hbm_bytes_read": 65536, "hbm_bytes_written": 32768, "grid_steps": 4},
     "operands": [{"role": "input", "dtype": "float32"}, {"role": "output", "dtype": "float32"}]},
    {"kernel": "nofacts", "cost": {}, "traffic": {"available": false}}])");
  const auto out = tpu::predict_pallas_calls(calls, v5e());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[0]["memory_s"].get<double>(), 98304.0 / *v5e().hbm_bandwidth_bytes_per_s, 1e-15);
  EXPECT_NEAR(out[0]["overhead_s"].get<double>(), 4 * kGridStepOverheadSeconds, 1e-15);
  EXPECT_TRUE(out[1].contains("unavailable"));
}

TEST(Store, MigratesCachesAndRecordsModelChecks) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("mk-store-" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(path);
  {
    Store s(path);
    EXPECT_EQ(s.schema_version(), Store::latest_schema_version());
    EXPECT_FALSE(s.cached_evaluation("k1"));
    s.store_evaluation("k1", "cpu", R"({"ok": true})");
    s.record_model_check("k1", "v5e", 1.1e-3, 1.0e-3);
    s.record_model_check("k2", "v5e", 0.8e-3, 1.0e-3);
  }
  Store reopened(path);  // the data and schema survive a restart
  EXPECT_EQ(*reopened.cached_evaluation("k1"), R"({"ok": true})");
  const auto a = reopened.model_accuracy("v5e");
  EXPECT_EQ(a.checks, 2);
  EXPECT_NEAR(a.mean_abs_relative_error, 0.15, 1e-9);
  EXPECT_EQ(reopened.model_accuracy("v6e").checks, 0);
  std::filesystem::remove(path);
}

TEST(Store, UnwritableLocationIsAClearError) {
  try {
    Store s("/proc/definitely/not/here.sqlite");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open the knowledge store"), std::string::npos);
  }
}

TEST(NormalizedSource, DropsCommentsAndBlankLinesOnly) {
  const std::string a =
      syntax::normalized_python_source("x = 1  # one\n\n\ns = '# not a comment'\r\n");
  EXPECT_EQ(a, "x = 1\ns = '# not a comment'\n");
  EXPECT_NE(a, syntax::normalized_python_source("x = 2\ns = '# not a comment'\n"));
}

}  // namespace
}  // namespace mk::knowledge
