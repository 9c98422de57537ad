// Kernels called through a project's own wrapper of pallas_call: in the same file, and through
// a forwarder description made from another file.
#include "source/pallas/forwarders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "pallas_test_util.h"
#include "source/analysis/document_analysis.h"
#include "source/pallas/kernel_extractor.h"
#include "source/pallas/model_cache.h"

namespace mk::pallas {
namespace {

using test_util::extract;
using test_util::Extracted;
using test_util::kPrelude;

// A site with a legal 2-D blocking; `callee` is what is called in place of pl.pallas_call.
std::string site_through(const std::string& callee, const std::string& block = "(128, 128)") {
  return "def run():\n"
         "    x = jnp.zeros((1024, 512), jnp.float32)\n"
         "    return " +
         callee +
         "(\n"
         "        kernel,\n"
         "        out_shape=jax.ShapeDtypeStruct((1024, 512), jnp.float32),\n"
         "        grid=(8, 4),\n"
         "        in_specs=[pl.BlockSpec(" +
         block +
         ", lambda i, j: (i, j))],\n"
         "        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),\n"
         "    )(x)\n";
}

TEST(Forwarders, SameFileStarArgsWrapperIsASite) {
  const Extracted e = extract(
      "def wrap(*args, **kwargs):\n"
      "    return pl.pallas_call(*args, **kwargs)\n\n" +
      site_through("wrap"));
  // The wrapper's own inner call stays a site (as any pallas_call); the call through it is one.
  ASSERT_EQ(e.model.kernels.size(), 2u);
  const Kernel& k = e.model.kernels[1];
  EXPECT_EQ(k.name, "kernel");
  EXPECT_EQ(k.enclosing_function, "run");
  EXPECT_EQ(e.text(k.call_span), "wrap");
  EXPECT_EQ(k.grid.extents, test_util::dims({8, 4}));
  ASSERT_EQ(k.inputs.size(), 1u);
  EXPECT_EQ(k.inputs[0].label, "x");
  ASSERT_TRUE(k.inputs[0].block.shape);
  EXPECT_EQ((*k.inputs[0].block.shape)[0].size, 128);
  ASSERT_EQ(k.outputs.size(), 1u);
  EXPECT_EQ(k.outputs[0].array_shape, test_util::dims({1024, 512}));
}

TEST(Forwarders, NamedParametersAreMappedByNameAndPosition) {
  const Extracted e = extract(
      "def wrap(body, shape, *, grid, in_specs, out_specs):\n"
      "    return pl.pallas_call(body, out_shape=shape, grid=grid, in_specs=in_specs,\n"
      "                          out_specs=out_specs)\n\n"
      "def run(x):\n"
      "    return wrap(kernel, jax.ShapeDtypeStruct((1024, 512), jnp.float32), grid=(8, 4),\n"
      "                in_specs=[pl.BlockSpec((128, 128), lambda i, j: (i, j))],\n"
      "                out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(x)\n");
  ASSERT_EQ(e.model.kernels.size(), 2u);
  const Kernel& k = e.model.kernels[1];
  EXPECT_EQ(k.name, "kernel");
  EXPECT_EQ(k.grid.extents, test_util::dims({8, 4}));
  ASSERT_EQ(k.outputs.size(), 1u);
  EXPECT_EQ(k.outputs[0].array_shape, test_util::dims({1024, 512}));
  ASSERT_EQ(k.inputs.size(), 1u);
  EXPECT_EQ(k.inputs[0].label, "x");
}

TEST(Forwarders, ConstantsTheWrapperAddsBecomeFacts) {
  const Extracted e = extract(
      "def wrap(kernel, **kwargs):\n"
      "    return pl.pallas_call(kernel, interpret=True,\n"
      "        compiler_params=pltpu.CompilerParams(dimension_semantics=('parallel', "
      "'arbitrary'), vmem_limit_bytes=1 << 20),\n"
      "        **kwargs)\n\n" +
      site_through("wrap"));
  ASSERT_EQ(e.model.kernels.size(), 2u);
  const Kernel& k = e.model.kernels[1];
  EXPECT_EQ(k.interpret, std::optional<bool>(true));
  ASSERT_TRUE(k.dimension_semantics);
  EXPECT_EQ(*k.dimension_semantics, (std::vector<std::string>{"parallel", "arbitrary"}));
  EXPECT_EQ(k.vmem_limit_bytes, std::optional<int64_t>(1 << 20));
  EXPECT_EQ(k.backend, Backend::Tpu);
  EXPECT_EQ(e.text(k.dimension_semantics_span), "wrap");
}

TEST(Forwarders, AFunctionRunningItsOwnKernelIsNotAWrapper) {
  const Extracted e = extract(
      "def copy(x, **kwargs):\n"
      "    return pl.pallas_call(kernel, out_shape=x, **kwargs)(x)\n\n"
      "def run(x):\n"
      "    return copy(x, grid=(8, 4))\n");
  // Only copy's own site; the call of copy is not one.
  ASSERT_EQ(e.model.kernels.size(), 1u);
  EXPECT_EQ(e.model.kernels[0].enclosing_function, "copy");
}

TEST(Forwarders, ChainsAreFollowedAndCyclesEnd) {
  const Extracted chain = extract(
      "def inner(kernel, **kwargs):\n"
      "    return pl.pallas_call(kernel, interpret=True, **kwargs)\n\n"
      "def outer(k, **kw):\n"
      "    return inner(k, **kw)\n\n" +
      site_through("outer"));
  // inner's own site, outer's call of inner (a site through inner), and run's.
  ASSERT_EQ(chain.model.kernels.size(), 3u);
  const Kernel& k = chain.model.kernels[2];
  EXPECT_EQ(chain.text(k.call_span), "outer");
  EXPECT_EQ(k.name, "kernel");
  EXPECT_EQ(k.interpret, std::optional<bool>(true));
  EXPECT_EQ(k.grid.extents, test_util::dims({8, 4}));

  const Extracted cycle = extract(
      "def a(*args, **kwargs):\n"
      "    return b(*args, **kwargs)\n\n"
      "def b(*args, **kwargs):\n"
      "    return a(*args, **kwargs)\n\n" +
      site_through("a"));
  EXPECT_TRUE(cycle.model.kernels.empty());
}

// The wrapper module of another file, described, then handed to the kernel file's analysis.
ForwarderSet described(const std::string& module, const std::string& text) {
  syntax::PythonTree tree;
  tree.parse(text);
  ForwarderSet set;
  for (Forwarder& f : find_forwarders(tree.root(), text)) {
    f.name = module + "." + f.name;
    set.emplace(f.name, std::move(f));
  }
  return set;
}

const std::string kBlockModule =
    "from jax.experimental import pallas as pl\n\n"
    "def pallas_call(kernel, *args, **kwargs):\n"
    "    return pl.pallas_call(kernel, *args, interpret=False, **kwargs)\n\n"
    "def helper(x):\n"
    "    return x + 1\n";

TEST(Forwarders, AWrapperFromAnotherFileByEveryImportForm) {
  const ForwarderSet set = described("pkg.block", kBlockModule);
  ASSERT_EQ(set.size(), 1u);
  const Forwarder& f = set.at("pkg.block.pallas_call");
  EXPECT_EQ(f.parameters, std::vector<std::string>{"kernel"});
  EXPECT_TRUE(f.star_args);
  EXPECT_TRUE(f.star_kwargs);
  EXPECT_EQ(f.interpret, std::optional<bool>(false));

  const knowledge::TpuGeneration& target = knowledge::tpu_generations().front();
  for (const auto& [imports, callee] : std::vector<std::pair<std::string, std::string>>{
           {"from pkg import block\n", "block.pallas_call"},
           {"import pkg.block as block\n", "block.pallas_call"},
           {"from pkg.block import pallas_call as pc\n", "pc"}}) {
    // An illegal block (100 rows) through the wrapper gets MK001 like a direct call.
    const std::string text = kPrelude + imports + site_through(callee, "(100, 128)");
    syntax::PythonTree tree;
    tree.parse(text);
    const analysis::DocumentAnalysis without =
        analysis::analyze_document(tree.root(), text, target);
    // Undescribed (a library outside the workspace), it is still a site, known from its own
    // arguments only: none of the wrapper's facts.
    ASSERT_EQ(without.model.kernels.size(), 1u) << imports;
    EXPECT_FALSE(without.model.kernels[0].interpret) << imports;
    const analysis::DocumentAnalysis with =
        analysis::analyze_document(tree.root(), text, target, nullptr, &set);
    ASSERT_EQ(with.model.kernels.size(), 1u) << imports;
    EXPECT_EQ(with.model.kernels[0].interpret, std::optional<bool>(false));
    bool mk001 = false;
    for (const auto& finding : with.findings) mk001 = mk001 || finding.code == "MK001";
    EXPECT_TRUE(mk001) << imports;
  }
}

TEST(Forwarders, ImportedNamesIncludeEveryDottedModule) {
  const std::string text =
      "import jax\nimport pkg.block\nimport pkg.other as other\nfrom pkg import block\n"
      "from pkg.block import pallas_call as pc\nx = 1\n";
  syntax::PythonTree tree;
  tree.parse(text);
  std::vector<std::string> names = imported_names(tree.root(), text);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"jax", "jax", "pkg", "pkg.block", "pkg.block",
                                             "pkg.block.pallas_call", "pkg.other"}));
}

TEST(Forwarders, TheCacheReusesStatementsAndNoticesAChangedWrapper) {
  const std::string text = kPrelude + "from pkg import block\n" +
                           site_through("block.pallas_call") + "\n" +
                           site_through("pl.pallas_call").replace(4, 3, "run2");
  syntax::PythonTree tree;
  tree.parse(text);
  ModelCache cache;
  ForwarderSet set = described("pkg.block", kBlockModule);
  EXPECT_EQ(extract_pallas_model(tree.root(), text, &cache, &set).kernels.size(), 2u);
  const PallasModel again = extract_pallas_model(tree.root(), text, &cache, &set);
  EXPECT_EQ(cache.last_pass().reused, 2u);
  EXPECT_EQ(again.kernels.size(), 2u);
  // The wrapper now runs in interpret mode: the cached kernel must not be reused as it was.
  ForwarderSet changed =
      described("pkg.block",
                "from jax.experimental import pallas as pl\n\n"
                "def pallas_call(kernel, *args, **kwargs):\n"
                "    return pl.pallas_call(kernel, *args, interpret=True, **kwargs)\n");
  const PallasModel after = extract_pallas_model(tree.root(), text, &cache, &changed);
  EXPECT_EQ(cache.last_pass().reused, 0u);
  ASSERT_EQ(after.kernels.size(), 2u);
  EXPECT_EQ(after.kernels[0].interpret, std::optional<bool>(true));
}

}  // namespace
}  // namespace mk::pallas
