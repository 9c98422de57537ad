// The diagnosis of a node on constructed metrics (no worker): each bound, the re-fetched operand
// and the axis it is re-read along, the roofline fraction, missing facts -> "unknown"; and the
// rewrite families each bound asks for.
#include "agents/orchestration/diagnosis.h"

#include <gtest/gtest.h>

#include "knowledge/time_model.h"

namespace mk::agents {
namespace {

using nlohmann::json;

const knowledge::TpuGeneration& dg_v5e() {
  return *knowledge::find_tpu_generation("v5e");
}

json dg_prediction(double compute_s, double memory_s, double overhead_s) {
  return {{"kernel", "k"},
          {"predicted_s", compute_s + memory_s + overhead_s},
          {"compute_s", compute_s},
          {"memory_s", memory_s},
          {"overhead_s", overhead_s}};
}

// A matmul on grid (4, 8, 2) whose x block (i, k) ignores axis 1 (j): fetched 64 times for 8
// distinct blocks.
json dg_matmul_call() {
  return {{"kernel", "matmul_kernel"},
          {"grid", {4, 8, 2}},
          {"vmem_bytes_per_step", 1 << 20},
          {"traffic",
           {{"available", true},
            {"grid_steps", 64},
            {"hbm_bytes_read", 3 << 20},
            {"hbm_bytes_written", 1 << 20},
            {"operands",
             {{{"role", "input"},
               {"index", 0},
               {"origin", "x_ref"},
               {"fetches", 64},
               {"distinct_blocks", 8},
               {"block_bytes", 4096},
               {"grid_axes_read", {0, 2}}},
              {{"role", "input"},
               {"index", 1},
               {"origin", "y_ref"},
               {"fetches", 16},
               {"distinct_blocks", 16},
               {"block_bytes", 4096},
               {"grid_axes_read", {1, 2}}},
              {{"role", "output"}, {"index", 0}, {"writebacks", 32}, {"block_bytes", 4096}}}}}}};
}

TEST(Diagnosis, HbmBoundNamesTheRefetchedOperandAndTheAxisItIsReReadAlong) {
  const json metrics = {{"pallas_calls", {dg_matmul_call()}},
                        {"predictions", {dg_prediction(1e-6, 5e-6, 0.5e-6)}}};
  const Diagnosis d = diagnose(metrics, 6.5e-6, dg_v5e());
  EXPECT_EQ(d.bound, "HBM");
  ASSERT_EQ(d.refetches.size(), 1u);  // y_ref is fetched once per distinct block
  EXPECT_EQ(d.refetches[0].operand, "x_ref");
  EXPECT_DOUBLE_EQ(d.refetches[0].ratio, 8.0);
  EXPECT_EQ(d.refetches[0].along_axes, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(d.refetches[0].extra_bytes, 56.0 * 4096);
  EXPECT_NE(d.summary.find("x_ref re-fetched 8x along grid axis 1"), std::string::npos)
      << d.summary;
  EXPECT_EQ(answering_strategies(d).front(), "block_sizes");
  EXPECT_EQ(preferred_block_direction(d), 1);
  EXPECT_EQ(*d.hbm_bytes, double(4 << 20));
}

TEST(Diagnosis, GridOverheadBoundWhenTheStepsCostMostAndAsksForLargerBlocks) {
  json call = {
      {"kernel", "add"},
      {"grid", {4096}},
      {"traffic", {{"available", true}, {"grid_steps", 4096}, {"operands", json::array()}}}};
  const json metrics = {{"pallas_calls", {call}},
                        {"predictions", {dg_prediction(1e-7, 2e-7, 1.4e-3)}}};
  const Diagnosis d = diagnose(metrics, 1.4e-3, dg_v5e());
  EXPECT_EQ(d.bound, "grid overhead");
  EXPECT_EQ(d.summary.rfind("grid overhead-bound", 0), 0u) << d.summary;
  EXPECT_EQ(answering_strategies(d).front(), "block_sizes");
  EXPECT_EQ(preferred_block_direction(d), 1);
}

TEST(Diagnosis, OverTheVmemBudgetWinsOverTheTimeSplitAndAsksForSmallerBlocks) {
  json call = dg_matmul_call();
  call["vmem_bytes_per_step"] = 40 << 20;
  call["vmem_limit_bytes"] = 16 << 20;
  const json metrics = {{"pallas_calls", {call}},
                        {"predictions", {dg_prediction(5e-6, 1e-6, 0.1e-6)}}};
  const Diagnosis d = diagnose(metrics, 6e-6, dg_v5e());
  EXPECT_EQ(d.bound, "VMEM");
  EXPECT_EQ(*d.vmem_limit_bytes, double(16 << 20));
  EXPECT_NE(d.summary.find("over the VMEM budget"), std::string::npos) << d.summary;
  EXPECT_EQ(answering_strategies(d).front(), "accumulator_f32");
  EXPECT_EQ(preferred_block_direction(d), -1);
}

TEST(Diagnosis, VmemLimitFallsBackToTheTargetsScopedLimit) {
  json call = dg_matmul_call();
  call["vmem_bytes_per_step"] = *dg_v5e().scoped_vmem_limit() + 1;
  const Diagnosis d = diagnose({{"pallas_calls", {call}}}, std::nullopt, dg_v5e());
  EXPECT_EQ(d.bound, "VMEM");
  EXPECT_EQ(*d.vmem_limit_bytes, double(*dg_v5e().scoped_vmem_limit()));
}

TEST(Diagnosis, ComputeBoundWithoutMatmulFlopsIsVpuWork) {
  const json calls = {{{"kernel", "k"}, {"grid", {2}}, {"traffic", {{"available", true}}}}};
  const json vpu = {{"pallas_calls", calls},
                    {"predictions", {dg_prediction(5e-6, 1e-6, 0)}},
                    {"task_work", {{"flops", 1e9}, {"matmul_flops", 0}, {"min_bytes", 1e6}}}};
  EXPECT_EQ(diagnose(vpu, 6e-6, dg_v5e()).bound, "compute (VPU)");
  json mxu = vpu;
  mxu["task_work"]["matmul_flops"] = 1e9;
  EXPECT_EQ(diagnose(mxu, 6e-6, dg_v5e()).bound, "compute");
}

TEST(Diagnosis, RooflineFractionIsTheTasksMinimumWorkAtThePeakOverTheScore) {
  knowledge::KernelCostFacts facts;
  facts.flops = 2e9;
  facts.hbm_bytes = 64e6;
  facts.grid_steps = 0;
  const auto roof = knowledge::predict_time(facts, dg_v5e());
  ASSERT_TRUE(roof);
  const double min_s = std::max(roof->compute_seconds, roof->memory_seconds);
  const json metrics = {
      {"task_work", {{"flops", 2e9}, {"matmul_flops", 2e9}, {"min_bytes", 64e6}}}};
  const Diagnosis d = diagnose(metrics, 4 * min_s, dg_v5e());
  ASSERT_TRUE(d.roofline_fraction);
  EXPECT_NEAR(*d.roofline_fraction, 0.25, 1e-9);
  EXPECT_NEAR(*d.roofline_s, min_s, 1e-15);
  // A reference root carries its XLA cost instead.
  const Diagnosis r =
      diagnose({{"xla_cost", {{"flops", 2e9}, {"min_bytes", 64e6}}}}, min_s, dg_v5e());
  EXPECT_NEAR(*r.roofline_fraction, 1.0, 1e-9);
}

TEST(Diagnosis, MissingFactsGiveUnknownNotAGuess) {
  const Diagnosis empty = diagnose(json::object(), 1e-3, dg_v5e());
  EXPECT_EQ(empty.bound, "unknown");
  EXPECT_FALSE(empty.roofline_fraction);
  EXPECT_TRUE(answering_strategies(empty).empty());
  EXPECT_EQ(preferred_block_direction(empty), 0);
  // One call without a prediction: no partial sum picks a bound.
  const json partial = {{"pallas_calls", {dg_matmul_call(), dg_matmul_call()}},
                        {"predictions", {dg_prediction(1e-6, 5e-6, 0), {{"unavailable", "no"}}}}};
  const Diagnosis d = diagnose(partial, 1e-3, dg_v5e());
  EXPECT_EQ(d.bound, "unknown");
  EXPECT_FALSE(d.compute_s);
  EXPECT_FALSE(d.roofline_fraction);  // no task work known
  EXPECT_EQ(d.summary.rfind("unknown", 0), 0u);
  // Traffic not available: the bytes are not summed.
  json call = dg_matmul_call();
  call["traffic"]["available"] = false;
  EXPECT_FALSE(diagnose({{"pallas_calls", {call}}}, std::nullopt, dg_v5e()).hbm_bytes);
}

TEST(Diagnosis, DeviceTraceShareIsFoldedInOnlyWhenMeasuredOnTheDevice) {
  json metrics = {{"profile", {{"summary", {{"measured", "device"}, {"pallas_share", 0.72}}}}}};
  EXPECT_DOUBLE_EQ(*diagnose(metrics, 1e-3, dg_v5e()).pallas_share, 0.72);
  metrics["profile"]["summary"]["measured"] = "host";  // interpret mode on a CPU host
  EXPECT_FALSE(diagnose(metrics, 1e-3, dg_v5e()).pallas_share);
}

TEST(Diagnosis, JsonRoundTripKeepsWhatTheExpanderReads) {
  const json metrics = {{"pallas_calls", {dg_matmul_call()}},
                        {"predictions", {dg_prediction(1e-6, 5e-6, 0.5e-6)}}};
  const Diagnosis d = diagnose(metrics, 6.5e-6, dg_v5e());
  const Diagnosis back = Diagnosis::from_json(d.to_json());
  EXPECT_EQ(back.bound, d.bound);
  EXPECT_EQ(back.summary, d.summary);
  ASSERT_EQ(back.refetches.size(), 1u);
  EXPECT_EQ(back.refetches[0].along_axes, d.refetches[0].along_axes);
  EXPECT_EQ(answer_text(back, "BLOCK_N 128 -> 256"), d.summary + " -> BLOCK_N 128 -> 256");
}

}  // namespace
}  // namespace mk::agents
