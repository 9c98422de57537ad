#include "agents/rewrites/rule_rewrites.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "agents/tuning/python_source.h"
#include "agents_test_util.h"

namespace mk::agents {
namespace {

using testing::read_repo_file;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = text.find('\n', at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

// The lines of `after` that are not in `before` (a one-change rewrite adds one or two lines).
std::vector<std::string> added_lines(const std::string& before, const std::string& after) {
  const auto old_lines = lines_of(before);
  std::multiset<std::string> pool(old_lines.begin(), old_lines.end());
  std::vector<std::string> added;
  for (const std::string& line : lines_of(after)) {
    auto it = pool.find(line);
    if (it == pool.end()) {
      added.push_back(line);
    } else {
      pool.erase(it);
    }
  }
  return added;
}

std::vector<const Variant*> with_strategy(const std::vector<Variant>& all, const std::string& s) {
  std::vector<const Variant*> out;
  for (const Variant& v : all) {
    if (v.strategy == s) out.push_back(&v);
  }
  return out;
}

void expect_valid_and_distinct(const std::string& source, const std::vector<Variant>& variants) {
  std::set<std::string> seen;
  for (const Variant& v : variants) {
    EXPECT_NE(v.source, source) << v.description;
    EXPECT_TRUE(check_python_syntax(v.source).ok) << v.description;
    EXPECT_TRUE(seen.insert(v.source).second) << "duplicate: " << v.description;
    EXPECT_FALSE(v.description.empty());
  }
}

TEST(RuleRewrites, BlockSizesDoubleAndHalveTheTunables) {
  const std::string source = read_repo_file("examples/matmul_tiled.py");
  const auto variants = rule_based_rewrites(source, "");
  expect_valid_and_distinct(source, variants);
  const auto blocks = with_strategy(variants, "block_sizes");
  ASSERT_EQ(blocks.size(), 6u);
  EXPECT_EQ(blocks[0]->description, "block_m 512 -> 1024");
  EXPECT_EQ(blocks[1]->description, "block_m 512 -> 256");
  EXPECT_EQ(added_lines(source, blocks[1]->source),
            (std::vector<std::string>{
                R"(TUNED_PARAMS = {"block_m": 256, "block_n": 512, "block_k": 512})"}));
  // dimension_semantics are already set; no bf16 scratch; every index map moves.
  EXPECT_TRUE(with_strategy(variants, "dimension_semantics").empty());
  EXPECT_TRUE(with_strategy(variants, "accumulator_f32").empty());
  EXPECT_TRUE(with_strategy(variants, "buffering").empty());
}

TEST(RuleRewrites, DimensionSemanticsAddedWithTheImportWhenAbsent) {
  const std::string source = read_repo_file("examples/softmax_rows.py");
  const auto variants = rule_based_rewrites(source, "softmax_kernel");
  expect_valid_and_distinct(source, variants);
  const auto semantics = with_strategy(variants, "dimension_semantics");
  ASSERT_EQ(semantics.size(), 1u);
  EXPECT_EQ(
      added_lines(source, semantics[0]->source),
      (std::vector<std::string>{
          "from jax.experimental.pallas import tpu as pltpu",
          "        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",)),"}));
  // Block sizes: 512 and 128 rows (x2 and /2) only.
  const auto blocks = with_strategy(variants, "block_sizes");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0]->description, "BLOCK_ROWS 256 -> 512");
  EXPECT_EQ(blocks[1]->description, "BLOCK_ROWS 256 -> 128");
}

TEST(RuleRewrites, EveryRuleOnTheFixture) {
  const std::string source = read_repo_file("tests/agents/fixtures/matmul_bias_bf16_scratch.py");
  const auto variants = rule_based_rewrites(source, "matmul_bias_kernel");
  expect_valid_and_distinct(source, variants);

  // Output index map (i, 0) uses i, not k: k is the reduction axis.
  const auto semantics = with_strategy(variants, "dimension_semantics");
  ASSERT_EQ(semantics.size(), 1u);
  EXPECT_EQ(added_lines(source, semantics[0]->source),
            (std::vector<std::string>{
                "        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", "
                "\"arbitrary\"), vmem_limit_bytes=32 * 1024 * 1024),"}));

  const auto accumulator = with_strategy(variants, "accumulator_f32");
  ASSERT_EQ(accumulator.size(), 1u);
  EXPECT_EQ(accumulator[0]->description, "accumulator `acc_ref` bfloat16 -> float32");
  EXPECT_EQ(added_lines(source, accumulator[0]->source),
            (std::vector<std::string>{
                "        scratch_shapes=[pltpu.VMEM((BLOCK_M, N), jnp.float32)],"}));

  // The bias block never moves: single-buffer it. With JAX 0.10.2 that is the only buffering.
  const auto buffering = with_strategy(variants, "buffering");
  ASSERT_EQ(buffering.size(), 1u);
  EXPECT_EQ(
      added_lines(source, buffering[0]->source),
      (std::vector<std::string>{
          "            pl.BlockSpec((1, N), lambda i, k: (0, 0), pipeline_mode=pl.Buffered(1)),"}));

  EXPECT_EQ(with_strategy(variants, "block_sizes").size(), 4u);
}

TEST(RuleRewrites, TripleBufferingOnlyWhereJaxLowersIt) {
  const std::string source = read_repo_file("tests/agents/fixtures/matmul_bias_bf16_scratch.py");
  RewriteOptions options;
  options.max_buffer_count = 3;
  const auto variants = rule_based_rewrites(source, "", options);
  const auto buffering = with_strategy(variants, "buffering");
  ASSERT_EQ(buffering.size(), 3u);  // x and w move every step: Buffered(3); b: Buffered(1)
  EXPECT_EQ(added_lines(source, buffering[0]->source),
            (std::vector<std::string>{"            pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, k: "
                                      "(i, k), pipeline_mode=pl.Buffered(3)),"}));
}

TEST(RuleRewrites, AnF32AccumulatorIsLeftAlone) {
  const std::string source = read_repo_file("tests/corpus/good/tpu_matmul_bf16_acc.py");
  const auto variants = rule_based_rewrites(source, "");
  EXPECT_TRUE(with_strategy(variants, "accumulator_f32").empty());
}

TEST(RuleRewrites, ReductionAxisFromTheOutputIndexMap) {
  std::string source = read_repo_file("tests/corpus/good/tpu_column_sum_reduction.py");
  const std::string params =
      "        compiler_params=pltpu.CompilerParams(\n"
      "            dimension_semantics=(\"parallel\", \"arbitrary\")\n"
      "        ),\n";
  const size_t at = source.find(params);
  ASSERT_NE(at, std::string::npos);
  source.erase(at, params.size());
  const auto variants = rule_based_rewrites(source, "");
  const auto semantics = with_strategy(variants, "dimension_semantics");
  ASSERT_EQ(semantics.size(), 1u);
  EXPECT_EQ(semantics[0]->description,
            "dimension_semantics (parallel, arbitrary) for the grid of `_colsum_kernel`");
}

TEST(RuleRewrites, BlockSizesOnlyOfTheChosenKernel) {
  const std::string source = R"(import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BLOCK_A = 64
BLOCK_B = 256


def a_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1


def b_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def f(x):
    y = pl.pallas_call(
        a_kernel,
        out_shape=jax.ShapeDtypeStruct((1024, 128), jnp.float32),
        grid=(1024 // BLOCK_A,),
        in_specs=[pl.BlockSpec((BLOCK_A, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((BLOCK_A, 128), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)
    return pl.pallas_call(
        b_kernel,
        out_shape=jax.ShapeDtypeStruct((1024, 128), jnp.float32),
        grid=(1024 // BLOCK_B,),
        in_specs=[pl.BlockSpec((BLOCK_B, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((BLOCK_B, 128), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(y)
)";
  const auto variants = rule_based_rewrites(source, "b_kernel");
  std::vector<std::string> descriptions;
  for (const Variant& v : variants) descriptions.push_back(v.description);
  EXPECT_EQ(descriptions, (std::vector<std::string>{"BLOCK_B 256 -> 512", "BLOCK_B 256 -> 128"}));
  const auto first = rule_based_rewrites(source, "");
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].description, "BLOCK_A 64 -> 128");
}

TEST(RuleRewrites, EveryGoodCorpusKernelGivesValidDistinctVariants) {
  size_t files = 0, variants_seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MK_SOURCE_DIR) + "/tests/corpus/good")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("tpu_", 0) != 0) continue;
    const std::string source = read_repo_file("tests/corpus/good/" + name);
    const auto variants = rule_based_rewrites(source, "");
    expect_valid_and_distinct(source, variants);
    ++files;
    variants_seen += variants.size();
  }
  EXPECT_GE(files, 20u);
  EXPECT_GE(variants_seen, 40u);
}

TEST(RuleRewrites, BlockSizesFollowNamesWhereTheModelCannot) {
  // `tm, tn, tk = (TUNED_PARAMS[k] for k in (...))`: the block shapes are unknown to the model.
  const std::string source = read_repo_file("tests/corpus/good/tpu_matmul_bf16_jaxbench_tuned.py");
  const auto variants = rule_based_rewrites(source, "");
  const auto blocks = with_strategy(variants, "block_sizes");
  ASSERT_EQ(blocks.size(), 6u);
  EXPECT_EQ(blocks[0]->description, "block_m 512 -> 1024");
}

TEST(RuleRewrites, BadInputIsAClearError) {
  EXPECT_THROW(rule_based_rewrites("def f(:\n", ""), std::invalid_argument);
  EXPECT_THROW(rule_based_rewrites("x = 1\n", ""), std::invalid_argument);
  EXPECT_THROW(rule_based_rewrites(read_repo_file("examples/softmax_rows.py"), "nope"),
               std::invalid_argument);
}

}  // namespace
}  // namespace mk::agents
