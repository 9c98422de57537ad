// The extra shapes' rules, fairness and the run's set (agents/orchestration/extra_shapes,
// agents/subagents/shape_cases), on lowering replies shaped like the worker's.
#include "agents/orchestration/extra_shapes.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

using nlohmann::json;
using Sizes = std::map<int64_t, int64_t>;

// A lowering reply: the task's inputs and one pallas_call whose operands are blocked as given.
json lowering(const json& input_shapes, const json& operands) {
  json inputs = json::array();
  for (const json& s : input_shapes) inputs.push_back({{"shape", s}, {"dtype", "float32"}});
  json ops = json::array();
  for (const json& o : operands)
    ops.push_back({{"role", "input"}, {"array_shape", o[0]}, {"block_shape", o[1]}});
  return {{"inputs", inputs}, {"pallas_calls", json::array({{{"operands", ops}}})}};
}

TEST(ShapeCases, GranularityIsTheLargestPowerOfTwoUpTo128) {
  EXPECT_EQ(size_granularity(4096), 128);
  EXPECT_EQ(size_granularity(512), 128);
  EXPECT_EQ(size_granularity(96), 32);
  EXPECT_EQ(size_granularity(72), 8);
  EXPECT_EQ(size_granularity(7), 1);
}

TEST(ExtraShapeRules, ARaggedAndASingleBlockShapeForABlockTheGranularityDoesNotFill) {
  // 512 x 128 rows in 256-row blocks: 384 rows leave the last block half outside.
  const TaskSizes sizes = TaskSizes::from_lowering(
      lowering({{512, 128}}, {{{512, 128}, {256, 128}}, {{512, 128}, {256, 128}}}));
  EXPECT_EQ(sizes.sizes, (std::vector<int64_t>{512, 128}));
  ASSERT_EQ(sizes.blocks.size(), 1u);  // 128 is whole in its block: not split
  const RuleShapes rules = rule_shapes(sizes);
  ASSERT_EQ(rules.cases.size(), 2u) << rules.none;
  EXPECT_EQ(rules.cases[0].name, "ragged");
  EXPECT_EQ(rules.cases[0].sizes, (Sizes{{512, 384}}));
  EXPECT_EQ(rules.cases[0].why,
            "512 -> 384 (3 x 128): a partial last block for any block of 256 or more a power of "
            "two");
  EXPECT_EQ(rules.cases[1].name, "single_block");
  EXPECT_EQ(rules.cases[1].sizes, (Sizes{{512, 256}}));
  for (const ShapeCase& c : rules.cases) EXPECT_EQ(shape_case_error(c, sizes.sizes), "");
}

TEST(ExtraShapeRules, RaggedAgainstEveryLooseBlockOfASize) {
  // A matmul with M = K = 512: blocks of 256 (M) and 128 (K) split the same size. 384 is ragged
  // for 256; 128 divides every multiple of 128 and cannot be ragged there.
  const TaskSizes sizes = TaskSizes::from_lowering(
      lowering({{512, 512}, {512, 256}}, {{{512, 512}, {256, 128}}, {{512, 256}, {128, 256}}}));
  const RuleShapes rules = rule_shapes(sizes);
  ASSERT_FALSE(rules.cases.empty());
  EXPECT_EQ(rules.cases[0].sizes, (Sizes{{512, 384}}));
  // A task of 72 rows promises only multiples of 8: 24 rows are ragged for 16-row blocks.
  const RuleShapes small =
      rule_shapes(TaskSizes::from_lowering(lowering({{72, 128}}, {{{72, 128}, {16, 128}}})));
  ASSERT_EQ(small.cases.size(), 2u);
  EXPECT_EQ(small.cases[0].sizes, (Sizes{{72, 24}}));
  EXPECT_EQ(small.cases[1].sizes, (Sizes{{72, 16}}));
}

TEST(ExtraShapeRules, RaggedForLargerBlocksEvenWhereTheKernelsOwnDivide) {
  // 4096 rows in 128-row blocks: 384 rows are three whole blocks for this kernel, and a partial
  // last block for a variant with 256-row blocks; one 128-row block is fair too.
  const RuleShapes fits =
      rule_shapes(TaskSizes::from_lowering(lowering({{4096, 256}}, {{{4096, 256}, {128, 256}}})));
  ASSERT_EQ(fits.cases.size(), 2u);
  EXPECT_EQ(fits.cases[0].sizes, (Sizes{{4096, 384}}));
  EXPECT_EQ(fits.cases[1].name, "single_block");
  EXPECT_EQ(fits.cases[1].sizes, (Sizes{{4096, 128}}));
  // 8-row blocks in 8192 rows: 8 rows are below the granularity (no single block); 128 rows
  // are 16 of its blocks and less than one block of 256.
  const RuleShapes tiny =
      rule_shapes(TaskSizes::from_lowering(lowering({{8192, 128}}, {{{8192, 128}, {8, 128}}})));
  ASSERT_EQ(tiny.cases.size(), 1u);
  EXPECT_EQ(tiny.cases[0].sizes, (Sizes{{8192, 128}}));
}

TEST(ExtraShapeRules, NoneWhereNothingIsSplitOrNoShapeFitsBelowTheTasks) {
  // 256 rows in 128-row blocks: the next odd multiple of 128 above a block is the task's own
  // 384 or more; one 128-row block is still a fair shape.
  const RuleShapes small =
      rule_shapes(TaskSizes::from_lowering(lowering({{256, 128}}, {{{256, 128}, {128, 128}}})));
  ASSERT_EQ(small.cases.size(), 1u);
  EXPECT_EQ(small.cases[0].name, "single_block");
  const RuleShapes none =
      rule_shapes(TaskSizes::from_lowering(lowering({{64, 128}}, {{{64, 128}, {8, 128}}})));
  EXPECT_TRUE(none.cases.empty());
  EXPECT_EQ(none.none, "every split size is too small for a ragged shape above its blocks");
  // Whole-array blocks split nothing.
  const RuleShapes whole =
      rule_shapes(TaskSizes::from_lowering(lowering({{64, 128}}, {{{64, 128}, {64, 128}}})));
  EXPECT_TRUE(whole.cases.empty());
  EXPECT_EQ(whole.none, "the kernel splits none of the task's input sizes into blocks");
}

TEST(ExtraShapes, TheKernelAsWrittenSettlesTheSet) {
  ExtraShapes shapes;
  shapes.cases = {{"ragged", {{512, 384}}, ""},
                  {"single_block", {{512, 256}}, ""},
                  {"tester_1", {{128, 8}}, ""}};
  EXPECT_EQ(shapes.worker_option(false), json::parse(R"({"required": false, "cases": [
              {"name": "ragged", "sizes": {"512": 384}},
              {"name": "single_block", "sizes": {"512": 256}},
              {"name": "tester_1", "sizes": {"128": 8}}]})"));
  shapes.settle(json::parse(R"({"cases": [
      {"name": "ragged", "status": "passed"},
      {"name": "single_block", "status": "failed", "message": "seed 3: output 0: shape [512] != [256]"},
      {"name": "tester_1", "status": "not_checked", "why": "it captures a constant array"}]})"));
  EXPECT_TRUE(shapes.settled);
  ASSERT_EQ(shapes.cases.size(), 1u);
  EXPECT_EQ(shapes.cases[0].name, "ragged");
  ASSERT_EQ(shapes.notes.size(), 2u);
  EXPECT_EQ(shapes.notes[0],
            "the kernel as written fails extra shape `single_block` (512 -> 256): seed 3: output "
            "0: shape [512] != [256]; its variants are not held to it");
  EXPECT_EQ(shapes.notes[1],
            "extra shape `tester_1` (128 -> 8) cannot be checked: it captures a constant array");
  const ExtraShapes again = ExtraShapes::from_json(shapes.to_json());
  EXPECT_EQ(again.cases, shapes.cases);
  EXPECT_TRUE(again.settled);
  EXPECT_EQ(again.notes, shapes.notes);
  EXPECT_EQ(again.summary().substr(0, 36), "extra shapes: ragged (512 -> 384)\n  ");
}

TEST(ExtraShapes, AddingKeepsNamesUniqueAndMapsOnceWithinTheBound) {
  std::vector<ShapeCase> set = {{"ragged", {{512, 384}}, ""}};
  add_shape_cases(
      set,
      {{"tester_1", {{512, 384}}, ""}, {"ragged", {{512, 128}}, ""}, {"tester_2", {{128, 8}}, ""}},
      3);
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set[1].name, "ragged_2");
  EXPECT_EQ(set[2].name, "tester_2");
}

}  // namespace
}  // namespace mk::agents
