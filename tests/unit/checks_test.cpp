// check_model (MK001..MK008) and estimate_vmem on minimal kernels, against TPU v5e.
#include "source/analysis/findings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "pallas_test_util.h"
#include "source/analysis/vmem.h"

namespace mk::analysis {
namespace {

using test_util::extract;
using test_util::Extracted;

const knowledge::TpuGeneration& v5e() {
  const knowledge::TpuGeneration* g = knowledge::find_tpu_generation("v5e");
  EXPECT_NE(g, nullptr);
  return *g;
}

// One output, no inputs: `pl.pallas_call(kernel, out_shape=..., grid=..., out_specs=...)()`.
struct Snippet {
  std::string shape = "(1024, 1024)";
  std::string dtype = "jnp.float32";
  std::string block = "(256, 256)";
  std::string index_map = "lambda i, j: (i, j)";
  std::string grid = "(4, 4)";
  std::string extra;     // more keyword arguments, each ending in ",\n"
  std::string preamble;  // module-level code before `run`

  std::string source() const {
    return preamble + "def run(n):\n    return pl.pallas_call(\n        kernel,\n" +
           "        out_shape=jax.ShapeDtypeStruct(" + shape + ", " + dtype + "),\n" +
           "        grid=" + grid + ",\n" + "        out_specs=pl.BlockSpec(" + block + ", " +
           index_map + "),\n" + extra + "    )()\n";
  }
};

struct Checked {
  Extracted e;
  std::vector<Finding> findings;
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Finding& f : findings) out.push_back(f.code);
    return out;
  }
  const Finding& only() const {
    EXPECT_EQ(findings.size(), 1u) << e.source;
    return findings.at(0);
  }
};

Checked check(const std::string& body) {
  Checked c{extract(body), {}};
  c.findings = check_model(c.e.model, v5e());
  return c;
}
Checked check(const Snippet& s) {
  return check(s.source());
}

using Codes = std::vector<std::string>;

TEST(Checks, DiagnosticCodeTableIsComplete) {
  const auto& table = diagnostic_codes();
  ASSERT_EQ(table.size(), 9u);  // MK000 (syntax errors) and MK001..MK008
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(std::string(table[i].code), "MK00" + std::to_string(i));
    EXPECT_EQ(std::string(table[i].slug).rfind("mk00" + std::to_string(i) + "-", 0), 0u);
  }
}

TEST(Checks, BaselineSnippetIsClean) {
  EXPECT_EQ(check(Snippet{}).codes(), Codes{});
}

TEST(Checks, MK001LastTwoDimsTiling) {
  Snippet s;
  s.shape = "(1024, 1000)";
  s.block = "(256, 100)";
  s.grid = "(4, 10)";
  const Checked bad = check(s);
  const Finding& f = bad.only();
  EXPECT_EQ(f.code, "MK001");
  EXPECT_EQ(f.severity, Severity::Error);
  EXPECT_EQ(bad.e.text(f.span), "(256, 100)");
  EXPECT_NE(f.message.find("last dim is 100"), std::string::npos) << f.message;
  s.block = "(256, 128)";
  EXPECT_EQ(check(s).codes(), Codes{});
  s.block = "(256, 1000)";  // equals the full array dim
  EXPECT_EQ(check(s).codes(), Codes{});
  s.block = "(100, 128)";  // second-to-last not a multiple of 8
  s.shape = "(1000, 1024)";
  EXPECT_EQ(check(s).codes(), Codes{"MK001"});
  s.shape = "(n, n)";  // array dims unknown (a parameter): no claim
  s.block = "(100, 100)";
  EXPECT_EQ(check(s).codes(), Codes{});
}

TEST(Checks, MK001SqueezedDimsInLastTwoCountAsOne) {
  Snippet s;
  s.shape = "(64, 128)";
  s.block = "(None, 128)";
  s.index_map = "lambda i: (i, 0)";
  s.grid = "(64,)";
  const Checked bad = check(s);
  ASSERT_EQ(bad.codes(), Codes{"MK001"});
  EXPECT_NE(bad.findings[0].message.find("squeezed"), std::string::npos);
  s.shape = "(1, 128)";  // a size-1 array dim may be squeezed
  s.grid = "(1,)";
  EXPECT_EQ(check(s).codes(), Codes{});
  s.shape = "(4, 64, 128)";  // squeezed dim outside the last two
  s.block = "(None, 64, 128)";
  s.index_map = "lambda b: (b, 0, 0)";
  s.grid = "(4,)";
  EXPECT_EQ(check(s).codes(), Codes{});
}

TEST(Checks, MK001OneDimensionalBlocks) {
  struct Case {
    const char* dtype;
    const char* array;
    const char* block;
    bool error;
  };
  const Case cases[] = {
      {"jnp.float32", "(4096,)", "(1000,)", true},  {"jnp.float32", "(4096,)", "(2048,)", false},
      {"jnp.float32", "(8192,)", "(3072,)", false},  // a multiple of 1024
      {"jnp.float32", "(4096,)", "(128,)", false},  {"jnp.float32", "(4096,)", "(64,)", true},
      {"jnp.bfloat16", "(4096,)", "(128,)", true},  {"jnp.bfloat16", "(4096,)", "(256,)", false},
      {"jnp.int8", "(4096,)", "(256,)", true},      {"jnp.int8", "(4096,)", "(512,)", false},
      {"jnp.float32", "(1000,)", "(1000,)", false},  // the whole array
      {"jnp.float32", "(n,)", "(1000,)", false},     // unknown array length
  };
  for (const Case& c : cases) {
    Snippet s;
    s.dtype = c.dtype;
    s.shape = c.array;
    s.block = c.block;
    s.index_map = "lambda i: (i,)";
    s.grid = "(2,)";
    EXPECT_EQ(check(s).codes(), c.error ? Codes{"MK001"} : Codes{})
        << c.dtype << " " << c.array << " " << c.block;
  }
}

TEST(Checks, MK002SubNativeSublaneTile) {
  Snippet s;
  s.dtype = "jnp.bfloat16";
  s.shape = "(64, 128)";
  s.block = "(8, 128)";
  s.index_map = "lambda i: (i, 0)";
  s.grid = "(8,)";
  const Checked bad = check(s);
  EXPECT_EQ(bad.only().code, "MK002");
  EXPECT_EQ(bad.only().severity, Severity::Hint);
  s.block = "(16, 128)";
  EXPECT_EQ(check(s).codes(), Codes{});
  s.dtype = "jnp.int8";
  EXPECT_EQ(check(s).codes(), Codes{"MK002"});
  s.block = "(32, 128)";
  EXPECT_EQ(check(s).codes(), Codes{});
  s.dtype = "jnp.bfloat16";  // a block spanning the whole dim is fine at any size
  s.shape = "(8, 128)";
  s.block = "(8, 128)";
  s.grid = "(1,)";
  EXPECT_EQ(check(s).codes(), Codes{});
}

TEST(Checks, MK003IndexMapArity) {
  Snippet s;
  s.index_map = "lambda i: (i, 0)";
  const Checked bad = check(s);
  EXPECT_EQ(bad.only().code, "MK003");
  EXPECT_EQ(bad.e.text(bad.only().span), "lambda i: (i, 0)");
  s.index_map = "lambda i, j, k=0: (i, j)";  // defaults: 2..3 arguments accepted
  EXPECT_EQ(check(s).codes(), Codes{});
  s.grid = "(2, 2, 2)";
  EXPECT_EQ(check(s).codes(), Codes{});
  s.grid = "(4,)";
  EXPECT_EQ(check(s).codes(), Codes{"MK003"});
  s.grid = "(2, 2, 2, 2)";
  EXPECT_EQ(check(s).codes(), Codes{"MK003"});
}

TEST(Checks, MK003CountsScalarPrefetchArguments) {
  const std::string call =
      "def run(idx):\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((64, 128), jnp.float32),\n"
      "        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(8,),\n"
      "            out_specs=pl.BlockSpec((8, 128), MAP)))(idx)\n";
  auto with = [&](const std::string& map) {
    std::string src = call;
    src.replace(src.find("MAP"), 3, map);
    return check(src);
  };
  const Checked bad = with("lambda i: (i, 0)");
  ASSERT_EQ(bad.codes(), Codes{"MK003"});
  EXPECT_NE(bad.findings[0].message.find("scalar-prefetch"), std::string::npos);
  EXPECT_EQ(with("lambda i, idx_ref: (idx_ref[i], 0)").codes(), Codes{});
}

TEST(Checks, MK004AndMK005DimensionSemantics) {
  Snippet s;
  s.extra = "        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",)),\n";
  const Checked len = check(s);
  EXPECT_EQ(len.only().code, "MK004");
  EXPECT_EQ(len.e.text(len.only().span), "(\"parallel\",)");
  s.extra =
      "        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", "
      "\"paralel\")),\n";
  const Checked typo = check(s);
  EXPECT_EQ(typo.only().code, "MK005");
  EXPECT_NE(typo.only().message.find("'paralel'"), std::string::npos);
  s.extra =
      "        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", "
      "\"arbitrary\")),\n";
  EXPECT_EQ(check(s).codes(), Codes{});
}

TEST(Checks, MK006BlockRank) {
  Snippet s;
  s.shape = "(4, 64, 128)";
  s.block = "(64, 128)";
  s.index_map = "lambda i, j: (i, j)";
  const Checked bad = check(s);
  EXPECT_EQ(bad.only().code, "MK006");
  EXPECT_EQ(bad.e.text(bad.only().span), "(64, 128)");
  s.block = "(None, 64, 128)";
  s.index_map = "lambda i, j: (i, 0, 0)";
  EXPECT_EQ(check(s).codes(), Codes{});
}

TEST(Checks, MK008IndexMapResultCount) {
  Snippet s;
  s.index_map = "lambda i, j: (i,)";
  EXPECT_EQ(check(s).only().code, "MK008");
  s.preamble = "def imap(i, j):\n    return (i, j, 0)\n\n";
  s.index_map = "imap";
  const Checked def = check(s);
  ASSERT_EQ(def.codes(), Codes{"MK008"});
  EXPECT_EQ(def.e.text(def.findings[0].span), "return (i, j, 0)");
  s.preamble = "def imap(i, j):\n    return (i, j)\n\n";
  EXPECT_EQ(check(s).codes(), Codes{});
}

TEST(Checks, MK007VmemOverLimits) {
  Snippet s;
  s.shape = "(8192, 8192)";
  s.block = "(2048, 2048)";  // 16 MiB x 2 buffers = 32 MiB > 16 MiB scoped default on v5e
  const Checked warn = check(s);
  EXPECT_EQ(warn.only().code, "MK007");
  EXPECT_EQ(warn.only().severity, Severity::Warning);
  EXPECT_EQ(warn.e.text(warn.only().span), "pl.pallas_call");
  EXPECT_NE(warn.only().message.find("default scoped VMEM limit"), std::string::npos);
  s.block = "(1024, 1024)";  // 8 MiB
  EXPECT_EQ(check(s).codes(), Codes{});
  s.block = "(8192, 4096)";  // 128 MiB x 2 > 128 MiB physical
  s.grid = "(1, 2)";
  const Checked err = check(s);
  EXPECT_EQ(err.only().code, "MK007");
  EXPECT_EQ(err.only().severity, Severity::Error);
  // vmem_limit_bytes raises the limit...
  s.block = "(2048, 2048)";
  s.grid = "(4, 4)";
  s.extra = "        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=64 * 1024 * 1024),\n";
  EXPECT_EQ(check(s).codes(), Codes{});
  // ...and lowers it.
  s.block = "(1024, 1024)";
  s.extra = "        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=4 * 1024 * 1024),\n";
  const Checked low = check(s);
  EXPECT_EQ(low.only().severity, Severity::Warning);
  EXPECT_NE(low.only().message.find("vmem_limit_bytes of 4 MiB"), std::string::npos)
      << low.only().message;
  // A vmem_limit_bytes above the physical VMEM is itself suspicious.
  s.extra = "        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=256 * 1024 * 1024),\n";
  const Checked above = check(s);
  EXPECT_EQ(above.only().severity, Severity::Warning);
  EXPECT_NE(above.only().message.find("has only 128 MiB"), std::string::npos)
      << above.only().message;
  // One grid step keeps one buffer: exactly 16 MiB is not over the limit.
  s.extra.clear();
  s.shape = "(2048, 2048)";
  s.block = "(2048, 2048)";
  s.preamble =
      "def whole():\n    return (0, 0)\n\n";  // (`lambda: ...` crashes: see KernelExtractor tests)
  s.index_map = "whole";
  s.grid = "()";
  EXPECT_EQ(check(s).codes(), Codes{});
}

TEST(Checks, InterpretModeSkipsMosaicRules) {
  Snippet s;
  s.shape = "(65536, 1000)";
  s.block = "(32768, 100)";          // MK001, and 16 MiB x 2 buffers: MK007
  s.index_map = "lambda i: (i, 0)";  // MK003: arity is still checked
  s.extra = "        interpret=True,\n";
  EXPECT_EQ(check(s).codes(), Codes{"MK003"});
  s.extra = "        interpret=False,\n";
  EXPECT_EQ(check(s).codes(), (Codes{"MK007", "MK001", "MK003"}));
}

TEST(Checks, GpuKernelsGetNoTpuTilingErrors) {
  Snippet s;
  s.preamble = "from jax.experimental.pallas import triton as plgpu\n";
  s.shape = "(64, 64)";
  s.block = "(16, 32)";
  s.extra = "        compiler_params=plgpu.CompilerParams(num_warps=4),\n";
  EXPECT_EQ(check(s).codes(), Codes{});
  s.extra.clear();
  EXPECT_EQ(check(s).codes(), Codes{"MK001"});  // the same block as a TPU kernel
}

TEST(Checks, FindingsAreSortedByPosition) {
  const Checked c = check(
      "def run(n):\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((64, 64), jnp.float32), "
      "grid=(2, 2),\n"
      "        out_specs=pl.BlockSpec((16, 32), lambda i: (i, 0)),\n"
      "        compiler_params=pltpu.CompilerParams(dimension_semantics=('parallel',)))()\n");
  EXPECT_EQ(c.codes(), (Codes{"MK001", "MK003", "MK004"}));
  for (size_t i = 1; i < c.findings.size(); ++i)
    EXPECT_LE(c.findings[i - 1].span.start, c.findings[i].span.start);
}

// ----- estimate_vmem ----------------------------------------------------------------------------

TEST(VmemEstimate, DoubleBufferingPaddingBufferedAndScratch) {
  const Extracted e = extract(
      "def run():\n"
      "    x = jnp.zeros((1024, 1024), jnp.float32)\n"
      "    w = jnp.zeros((64, 1000), jnp.bfloat16)\n"
      "    h = jnp.zeros((4, 8, 128), jnp.float32)\n"
      "    return pl.pallas_call(kernel, grid=(4,),\n"
      "        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),\n"
      "        in_specs=[pl.BlockSpec((256, 512), lambda i: (i, 0)),\n"
      "                  pl.BlockSpec((10, 100), lambda i: (0, 0), pipeline_mode=pl.Buffered(1)),\n"
      "                  pl.BlockSpec((None, 8, 128), lambda i: (i, 0, 0), "
      "pipeline_mode=pl.Buffered(3)),\n"
      "                  pl.BlockSpec(memory_space=pl.ANY)],\n"
      "        out_specs=pl.BlockSpec((256, 512), lambda i: (i, 0)),\n"
      "        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32), pltpu.SMEM((16,), "
      "jnp.int32)],\n"
      "    )(x, w, h, x)\n");
  const pallas::Kernel& k = e.only();
  EXPECT_EQ(total_grid_steps(k), 4);
  EXPECT_EQ(block_bytes(k.inputs[1]), 10 * 100 * 2);
  EXPECT_EQ(padded_block_bytes(k.inputs[1]), 16 * 128 * 2);  // bf16 sublane tile is 16
  EXPECT_EQ(block_bytes(k.inputs[2]), 8 * 128 * 4);
  EXPECT_EQ(padded_block_bytes(k.inputs[2]), 8 * 128 * 4);  // the squeezed dim vanishes

  const VmemEstimate est = estimate_vmem(k);
  EXPECT_TRUE(est.complete);
  const int64_t expected = 256 * 512 * 4 * 2    // x, double-buffered
                           + 16 * 128 * 2 * 1   // w, padded, Buffered(1)
                           + 8 * 128 * 4 * 3    // h, Buffered(3)
                           + 256 * 512 * 4 * 2  // out
                           + 128 * 128 * 4;     // VMEM scratch (SMEM scratch excluded)
  EXPECT_EQ(est.known_bytes, expected);
  ASSERT_EQ(est.parts.size(), 5u);  // the pl.ANY input and the SMEM scratch are not VMEM
  EXPECT_EQ(est.parts[0].what, "x x2");
  EXPECT_EQ(est.parts[1].what, "w");
  EXPECT_EQ(est.parts[2].what, "h x3");
  EXPECT_EQ(est.parts[3].what, "out x2");
  EXPECT_EQ(est.parts[4].what, "scratch");
  EXPECT_EQ(est.parts[4].bytes, 128 * 128 * 4);
}

TEST(VmemEstimate, SingleStepAndUnknowns) {
  const Extracted one = extract(
      "y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 100), jnp.float32))()\n");
  const VmemEstimate a = estimate_vmem(one.only());
  EXPECT_TRUE(a.complete);
  EXPECT_EQ(a.known_bytes, 8 * 128 * 4);  // whole array, padded lanes, one buffer
  const Extracted unknown = extract(
      "def run(x):\n"
      "    return pl.pallas_call(kernel, grid=(2,), out_shape=jax.ShapeDtypeStruct((16, 128), "
      "jnp.float32),\n"
      "        in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],\n"
      "        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))(x)\n");
  const VmemEstimate b = estimate_vmem(unknown.only());
  EXPECT_FALSE(b.complete);  // x's dtype is unknown
  EXPECT_EQ(b.known_bytes, 8 * 128 * 4 * 2);
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64 * 1024), "64 KiB");
  EXPECT_EQ(format_bytes(3 * 512 * 1024), "1.5 MiB");
}

}  // namespace
}  // namespace mk::analysis
