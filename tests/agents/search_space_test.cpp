#include "agents/tuning/search_space.h"

#include <gtest/gtest.h>

#include "agents_test_util.h"

namespace mk::agents {
namespace {

using nlohmann::json;
using testing::read_repo_file;

const TunableParam* find(const std::vector<TunableParam>& params, const std::string& name) {
  for (const auto& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<json> ints(std::initializer_list<int64_t> values) {
  std::vector<json> out;
  for (int64_t v : values) out.emplace_back(v);
  return out;
}

TEST(SearchSpace, TunedParamsOfTheMatmulExampleThroughTupleAliases) {
  // bm, bn, bk = TUNED_PARAMS["block_m"], ...; M = N = K = 2048 in CONFIG.
  const auto params = derive_search_space(read_repo_file("examples/matmul_tiled.py"));
  ASSERT_EQ(params.size(), 3u);
  for (const char* name : {"block_m", "block_n", "block_k"}) {
    const TunableParam* p = find(params, name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->origin, "TUNED_PARAMS");
    EXPECT_EQ(p->current, 512);
    EXPECT_EQ(p->values, ints({512, 1024, 256, 2048})) << name;
  }
}

TEST(SearchSpace, SoftmaxTunesRowsNotTheProblemSize) {
  const auto params = derive_search_space(read_repo_file("examples/softmax_rows.py"));
  ASSERT_EQ(params.size(), 1u);  // ROWS and COLS change the arrays: problem sizes
  EXPECT_EQ(params[0].name, "BLOCK_ROWS");
  EXPECT_EQ(params[0].origin, "module constant");
  EXPECT_EQ(params[0].values, ints({256, 512, 128, 1024, 64}));
}

TEST(SearchSpace, CorpusKernels) {
  auto colsum =
      derive_search_space(read_repo_file("tests/corpus/good/tpu_column_sum_reduction.py"));
  ASSERT_EQ(colsum.size(), 2u);  // M only changes the grid (its array is built outside): not tuned
  EXPECT_EQ(find(colsum, "BM")->values, ints({1024, 2048, 512, 4096, 256}));
  // BN is the lane dim of the (BM, BN) input and the (1, BN) output of a (1, 2048) array.
  EXPECT_EQ(find(colsum, "BN")->values, ints({512, 1024, 256, 2048, 128}));

  auto bf16 = derive_search_space(read_repo_file("tests/corpus/good/tpu_matmul_bf16_acc.py"));
  ASSERT_EQ(bf16.size(), 3u);
  EXPECT_EQ(find(bf16, "BLOCK_M")->values, ints({256, 512, 128, 1024}));
  EXPECT_EQ(find(bf16, "BLOCK_K")->values, ints({512, 1024, 256, 2048}));

  // HEAD_DIM is the whole last dim of q/k/v (whose shapes come from outside the file): a
  // problem size, not a block size. (BQ = BK = 512 is a chained assignment: not tunable.)
  auto flash =
      derive_search_space(read_repo_file("tests/corpus/good/tpu_flash_attention_block_sparse.py"));
  EXPECT_EQ(find(flash, "HEAD_DIM"), nullptr);

  // `tm, tn, tk = (TUNED_PARAMS[k] for k in (...))`; vmem_limit_bytes is not a block size.
  auto tuned =
      derive_search_space(read_repo_file("tests/corpus/good/tpu_matmul_bf16_jaxbench_tuned.py"));
  EXPECT_EQ(find(tuned, "vmem_limit_bytes"), nullptr);
  ASSERT_NE(find(tuned, "block_k"), nullptr);
  EXPECT_EQ(find(tuned, "block_k")->values.front(), 1024);
}

TEST(SearchSpace, BlockDimsDivideTheArrayAndKeepTheSublaneRule) {
  const std::string source = R"(import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = 32


def k(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def f(x):
    return pl.pallas_call(
        k,
        out_shape=jax.ShapeDtypeStruct((96, 128), jnp.float32),
        grid=(96 // BLOCK,),
        in_specs=[pl.BlockSpec((BLOCK, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((BLOCK, 128), lambda i: (i, 0)),
    )(x)
)";
  const auto params = derive_search_space(source);
  ASSERT_EQ(params.size(), 1u);
  // 64 does not divide 96, 128 is bigger than 96; 16 and 8 are multiples of 8 that divide it.
  EXPECT_EQ(params[0].values, ints({32, 16, 8}));
}

TEST(SearchSpace, LaneDimsStayMultiplesOf128OrTheWholeArray) {
  const std::string source = R"(import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK_COLS = 256
NUM_STAGES = 2


def k(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def f(x):
    return pl.pallas_call(
        k,
        out_shape=jax.ShapeDtypeStruct((8, 1024), jnp.float32),
        grid=(1024 // BLOCK_COLS,),
        in_specs=[pl.BlockSpec((8, BLOCK_COLS), lambda j: (0, j))],
        out_specs=pl.BlockSpec((8, BLOCK_COLS), lambda j: (0, j)),
    )(x)
)";
  const auto params = derive_search_space(source);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(find(params, "BLOCK_COLS")->values, ints({256, 512, 128, 1024}));  // not 64
  EXPECT_EQ(find(params, "NUM_STAGES")->values, ints({2, 3, 1}));
  // A block direction reorders block sizes only, never stage counts.
  SearchSpaceOptions smaller;
  smaller.block_direction = -1;
  const auto ordered = derive_search_space(source, smaller);
  EXPECT_EQ(find(ordered, "BLOCK_COLS")->values, ints({256, 128, 512, 1024}));
  EXPECT_EQ(find(ordered, "NUM_STAGES")->values, ints({2, 3, 1}));
}

TEST(SearchSpace, CappedToMaxConfigs) {
  SearchSpaceOptions options;
  options.max_configs = 8;
  const auto params = derive_search_space(read_repo_file("examples/matmul_tiled.py"), options);
  size_t product = 1;
  for (const auto& p : params) {
    product *= p.values.size();
    EXPECT_EQ(p.values.front(), 512);  // current first, never dropped
  }
  EXPECT_LE(product, 8u);
  EXPECT_EQ(product, 8u);
}

TEST(SearchSpace, ABlockDirectionPutsThatSideFirstSoTrimmingKeepsIt) {
  const std::string softmax = read_repo_file("examples/softmax_rows.py");
  SearchSpaceOptions larger, smaller;
  larger.block_direction = 1;
  smaller.block_direction = -1;
  EXPECT_EQ(derive_search_space(softmax, larger)[0].values, ints({256, 512, 1024, 128, 64}));
  EXPECT_EQ(derive_search_space(softmax, smaller)[0].values, ints({256, 128, 64, 512, 1024}));

  // block_m/n/k of 512 (64 configurations), trimmed: the nearest values of the wanted side stay
  // (untrimmed order 512, 1024, 256, 2048 would keep 256 at 27 and 1024 at 8).
  const std::string matmul = read_repo_file("examples/matmul_tiled.py");
  larger.max_configs = 27;
  smaller.max_configs = 8;
  const auto wide = derive_search_space(matmul, larger);
  const auto narrow = derive_search_space(matmul, smaller);
  ASSERT_EQ(wide.size(), 3u);
  ASSERT_EQ(narrow.size(), 3u);
  for (const auto& p : wide) EXPECT_EQ(p.values, ints({512, 1024, 2048})) << p.name;
  for (const auto& p : narrow) EXPECT_EQ(p.values, ints({512, 256})) << p.name;
  EXPECT_EQ(to_worker_space(narrow, 8)["block_k"], json({512, 256}));
}

TEST(SearchSpace, WorkerSpaceShapeAndCap) {
  const auto params = derive_search_space(read_repo_file("examples/matmul_tiled.py"));
  const json space = to_worker_space(params, 64);
  EXPECT_EQ(space["block_m"], json::parse("[512, 1024, 256, 2048]"));
  const json small = to_worker_space(params, 4);
  size_t product = 1;
  for (const auto& [name, values] : small.items()) product *= values.size();
  EXPECT_LE(product, 4u);
  EXPECT_EQ(to_worker_space({}, 4), json::object());
}

TEST(SearchSpace, NoKernelNoSpace) {
  EXPECT_TRUE(derive_search_space("BLOCK = 128\n").empty());
}

TEST(SearchSpace, ProposedValuesAreCheckedWithTheSameRules) {
  const std::string source = read_repo_file("examples/softmax_rows.py");
  EXPECT_TRUE(config_keeps_blocks_legal(source, {{"BLOCK_ROWS", 4096}}));
  EXPECT_FALSE(config_keeps_blocks_legal(source, {{"BLOCK_ROWS", 100}}));
  EXPECT_FALSE(config_keeps_blocks_legal(source, {{"BLOCK_ROWS", 8192}}));
  EXPECT_FALSE(config_keeps_blocks_legal(source, {{"ROWS", 8192}}));  // a problem size
}

}  // namespace
}  // namespace mk::agents
