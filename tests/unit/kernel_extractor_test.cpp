// extract_pallas_model: finding pallas_call sites and decoding their arguments.
#include "source/pallas/kernel_extractor.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "pallas_test_util.h"

namespace mk::pallas {
namespace {

using test_util::dims;
using test_util::extract;
using test_util::Extracted;

// A complete 2-D call; `extra` is spliced into its keyword arguments.
std::string call_with(const std::string& extra) {
  return "def run(x):\n"
         "    return pl.pallas_call(\n"
         "        kernel,\n"
         "        out_shape=jax.ShapeDtypeStruct((1024, 512), jnp.float32),\n"
         "        grid=(8, 4),\n"
         "        in_specs=[pl.BlockSpec((128, 128), lambda i, j: (i, j))],\n"
         "        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),\n" +
         extra + "    )(x)\n";
}

TEST(KernelExtractor, DirectPallasCall) {
  const Extracted e = extract(
      "def add_kernel(x_ref, y_ref, o_ref):\n    o_ref[...] = x_ref[...] + y_ref[...]\n\n"
      "def add(x):\n"
      "    y = jnp.zeros((1024, 512), jnp.bfloat16)\n"
      "    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct((1024, 512), "
      "jnp.float32),\n"
      "        grid=(8, 4),\n"
      "        in_specs=[pl.BlockSpec((128, 128), lambda i, j: (i, j)),\n"
      "                  pl.BlockSpec((128, 256), lambda i, j: (i, 0))],\n"
      "        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),\n"
      "    )(x, y)\n");
  EXPECT_FALSE(e.model.syntax_errors);
  const Kernel& k = e.only();
  EXPECT_EQ(k.name, "add_kernel");
  EXPECT_EQ(k.enclosing_function, "add");
  ASSERT_TRUE(k.kernel_name_span);
  EXPECT_EQ(e.text(*k.kernel_name_span), "add_kernel");
  ASSERT_TRUE(k.kernel_def_span);
  EXPECT_EQ(e.text(*k.kernel_def_span).rfind("def add_kernel(", 0), 0u);
  EXPECT_EQ(e.text(k.call_span), "pl.pallas_call");
  const std::string site = e.text(k.site_span);
  EXPECT_EQ(site.rfind("pl.pallas_call(", 0), 0u);
  EXPECT_EQ(site.back(), ')');
  EXPECT_EQ(site.find("(x, y)"), std::string::npos);  // the site excludes the invocation
  EXPECT_EQ(k.backend, Backend::Tpu);
  EXPECT_EQ(k.grid.rank, 2u);
  EXPECT_EQ(k.grid.extents, dims({8, 4}));

  ASSERT_EQ(k.inputs.size(), 2u);
  EXPECT_TRUE(k.inputs_complete);
  EXPECT_EQ(k.inputs[0].label, "x");
  EXPECT_FALSE(k.inputs[0].array_shape.has_value());  // a parameter
  EXPECT_FALSE(k.inputs[0].unknown_because.empty());
  EXPECT_EQ(k.inputs[1].label, "y");
  EXPECT_EQ(k.inputs[1].array_shape, dims({1024, 512}));
  ASSERT_TRUE(k.inputs[1].dtype);
  EXPECT_EQ(k.inputs[1].dtype->name, "bfloat16");
  ASSERT_TRUE(k.inputs[1].block.shape);
  EXPECT_EQ((*k.inputs[1].block.shape)[1].size, 256);
  EXPECT_EQ(e.text(k.inputs[1].block.shape_span), "(128, 256)");

  ASSERT_EQ(k.outputs.size(), 1u);
  const Operand& out = k.outputs[0];
  EXPECT_EQ(out.label, "out");
  EXPECT_EQ(out.array_shape, dims({1024, 512}));
  ASSERT_TRUE(out.dtype);
  EXPECT_EQ(out.dtype->name, "float32");
  EXPECT_FALSE(out.block.whole_array);
  ASSERT_TRUE(out.block.index_map);
  EXPECT_EQ(out.block.index_map->arity, 2);
  EXPECT_EQ(out.block.index_map->required_arity, 2);
  EXPECT_EQ(out.block.index_map->result_rank, 2);
  EXPECT_EQ(e.text(out.block.index_map->span), "lambda i, j: (i, j)");
}

TEST(KernelExtractor, ImportAliasForms) {
  const std::string body =
      "def kernel(x_ref, o_ref):\n    pass\n\n"
      "def run(x):\n    return CALL(kernel, out_shape=x)(x)\n";
  auto count = [&](const std::string& imports, const std::string& callee) {
    std::string src = imports + body;
    src.replace(src.find("CALL"), 4, callee);
    return extract(src, false).model.kernels.size();
  };
  EXPECT_EQ(count("from jax.experimental import pallas as pl\n", "pl.pallas_call"), 1u);
  EXPECT_EQ(count("import jax.experimental.pallas as pl\n", "pl.pallas_call"), 1u);
  EXPECT_EQ(count("from jax.experimental.pallas import pallas_call\n", "pallas_call"), 1u);
  EXPECT_EQ(count("import jax\n", "jax.experimental.pallas.pallas_call"), 1u);
  EXPECT_EQ(count("from jax.experimental import pallas as pl\ncall = pl.pallas_call\n", "call"),
            1u);
  // pallas_call re-exported by another imported module (a kernel library's `block` module).
  EXPECT_EQ(count("from jax.experimental import pallas as block\n", "block.pallas_call"), 1u);
  EXPECT_EQ(count("import mylib as pl\n", "pl.pallas_call"), 1u);
  EXPECT_EQ(count("import some_lib.block as block\n", "block.pallas_call"), 1u);
  EXPECT_EQ(count("from some_lib import block\n", "block.pallas_call"), 1u);
  EXPECT_EQ(count("from some_lib.block import pallas_call as pc\n", "pc"), 1u);
  // Look-alikes are ignored: a local def, an unbound name, another attribute, a parameter.
  EXPECT_EQ(count("def pallas_call(*a, **k):\n    pass\n", "pallas_call"), 0u);
  EXPECT_EQ(count("", "pl.pallas_call"), 0u);
  EXPECT_EQ(count("import some_lib.block as block\n", "block.pallas_call_helper"), 0u);
  EXPECT_EQ(count("import some_lib.block as block\n", "block.pallas_caller"), 0u);
  EXPECT_EQ(count("import some_lib\nlib = object()\n", "lib.pallas_call"), 0u);
}

TEST(KernelExtractor, PallasCallThroughAnotherModuleIsDescribedFromItsArguments) {
  const Extracted e = extract(
      "import some_lib.block as block\n\n"
      "def scale_kernel(x_ref, o_ref):\n    o_ref[...] = 2.0 * x_ref[...]\n\n"
      "def scale(x):\n"
      "    return block.pallas_call(scale_kernel,\n"
      "        out_shape=jax.ShapeDtypeStruct((1024, 128), jnp.float32),\n"
      "        grid=(8,),\n"
      "        in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))],\n"
      "        out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)),\n"
      "    )(x)\n");
  const Kernel& k = e.only();
  EXPECT_EQ(k.name, "scale_kernel");
  EXPECT_EQ(k.enclosing_function, "scale");
  EXPECT_EQ(e.text(k.call_span), "block.pallas_call");
  EXPECT_EQ(k.grid.extents, dims({8}));
  ASSERT_EQ(k.inputs.size(), 1u);
  ASSERT_EQ(k.outputs.size(), 1u);
  // The hover says where the call came from and that only its own arguments describe it.
  bool noted = false;
  for (const std::string& u : k.unknowns)
    noted |= u.find("`some_lib.block.pallas_call`") != std::string::npos;
  EXPECT_TRUE(noted);
  // Pallas' own pallas_call carries no such note.
  const Extracted own = extract(
      "def k(x_ref, o_ref):\n    pass\n\n"
      "def run(x):\n    return pl.pallas_call(k, out_shape=x)(x)\n");
  for (const std::string& u : own.only().unknowns)
    EXPECT_EQ(u.find("outside jax's Pallas"), std::string::npos) << u;
}

TEST(KernelExtractor, PartialOfPallasCall) {
  const Extracted e = extract(
      "def run(x):\n"
      "    call = functools.partial(pl.pallas_call, kernel,\n"
      "                             out_shape=jax.ShapeDtypeStruct((256, 256), jnp.float32), "
      "grid=(2,))\n"
      "    return call(x)\n");
  const Kernel& k = e.only();
  EXPECT_EQ(k.name, "kernel");
  EXPECT_EQ(e.text(k.call_span), "pl.pallas_call");
  EXPECT_EQ(e.text(k.site_span).rfind("functools.partial(", 0), 0u);
  EXPECT_EQ(k.grid.extents, dims({2}));
  ASSERT_EQ(k.outputs.size(), 1u);
  EXPECT_EQ(k.outputs[0].array_shape, dims({256, 256}));
  EXPECT_FALSE(k.inputs_complete);  // the operands are not visible at the site

  const Extracted f =
      extract("from functools import partial\ncall = partial(pl.pallas_call, kernel, grid=4)\n");
  EXPECT_EQ(f.only().name, "kernel");
  EXPECT_EQ(f.only().grid.extents, dims({4}));
}

TEST(KernelExtractor, KernelThroughPartialAndLambda) {
  const Extracted e = extract(
      "def norm_kernel(x_ref, o_ref, *, eps):\n    pass\n\n"
      "def run(x):\n"
      "    body = functools.partial(norm_kernel, eps=1e-6)\n"
      "    a = pl.pallas_call(body, out_shape=x)(x)\n"
      "    b = pl.pallas_call(functools.partial(norm_kernel, eps=1e-5), out_shape=x)(x)\n"
      "    c = pl.pallas_call(lambda x_ref, o_ref: None, out_shape=x)(x)\n"
      "    d = pl.pallas_call(kernel=undefined_kernel, out_shape=x)(x)\n"
      "    return a, b, c, d\n");
  ASSERT_EQ(e.model.kernels.size(), 4u);
  EXPECT_EQ(e.model.kernels[0].name, "norm_kernel");
  EXPECT_EQ(e.model.kernels[1].name, "norm_kernel");
  ASSERT_TRUE(e.model.kernels[1].kernel_name_span);
  EXPECT_EQ(e.text(*e.model.kernels[1].kernel_name_span), "norm_kernel");
  const Kernel& lam = e.model.kernels[2];
  EXPECT_EQ(lam.name, "<lambda>");
  ASSERT_TRUE(lam.kernel_def_span);
  EXPECT_EQ(e.text(*lam.kernel_def_span), "lambda x_ref, o_ref: None");
  EXPECT_FALSE(lam.kernel_name_span.has_value());
  const Kernel& undef = e.model.kernels[3];
  EXPECT_EQ(undef.name, "undefined_kernel");
  EXPECT_FALSE(undef.kernel_def_span.has_value());
  ASSERT_FALSE(undef.unknowns.empty());
  EXPECT_NE(undef.unknowns[0].find("undefined_kernel"), std::string::npos);
}

TEST(KernelExtractor, EnclosingMethodsAndJitWrappers) {
  const Extracted e = extract(
      "class Op:\n    def __call__(self, x):\n"
      "        return pl.pallas_call(kernel, out_shape=x, grid=(4,))(x)\n\n"
      "@jax.jit\ndef jitted(x):\n"
      "    return pl.pallas_call(kernel, out_shape=x)(x)\n\n"
      "@functools.partial(jax.jit, static_argnames=('block',))\n"
      "def tiled(x, block):\n"
      "    return pl.pallas_call(kernel, out_shape=x, grid=(1024 // block,))(x)\n");
  ASSERT_EQ(e.model.kernels.size(), 3u);
  EXPECT_EQ(e.model.kernels[0].enclosing_function, "__call__");
  EXPECT_EQ(e.model.kernels[0].grid.extents, dims({4}));
  EXPECT_EQ(e.model.kernels[1].enclosing_function, "jitted");
  EXPECT_EQ(e.model.kernels[1].grid.rank, 0u);  // no grid: ()
  const Kernel& tiled = e.model.kernels[2];
  EXPECT_EQ(tiled.enclosing_function, "tiled");
  EXPECT_EQ(tiled.grid.rank, 1u);
  ASSERT_EQ(tiled.grid.extents.size(), 1u);
  EXPECT_FALSE(tiled.grid.extents[0].has_value());  // depends on a static argument
}

TEST(KernelExtractor, PrefetchScalarGridSpec) {
  const Extracted e = extract(
      "def run(idx, x):\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((1024, 256), "
      "jnp.float32),\n"
      "        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(8,),\n"
      "            in_specs=[pl.BlockSpec((128, 256), lambda i, idx_ref: (idx_ref[i], 0))],\n"
      "            out_specs=pl.BlockSpec((128, 256), lambda i, idx_ref: (i, 0)),\n"
      "            scratch_shapes=[pltpu.VMEM((128, 256), jnp.float32), "
      "pltpu.SemaphoreType.DMA((2,))]),\n"
      "    )(idx, x)\n");
  const Kernel& k = e.only();
  EXPECT_TRUE(k.prefetch_grid_spec);
  EXPECT_EQ(k.num_scalar_prefetch, 1);
  EXPECT_EQ(k.grid.extents, dims({8}));
  ASSERT_EQ(k.inputs.size(), 1u);
  EXPECT_EQ(k.inputs[0].label, "x");  // the prefetched scalar operand is not a blocked input
  ASSERT_TRUE(k.inputs[0].block.index_map);
  EXPECT_EQ(k.inputs[0].block.index_map->arity, 2);
  ASSERT_EQ(k.scratch.size(), 2u);
  EXPECT_EQ(k.scratch[0].kind, "VMEM");
  EXPECT_EQ(k.scratch[0].memory_space, MemorySpace::Vmem);
  EXPECT_EQ(k.scratch[0].shape, dims({128, 256}));
  ASSERT_TRUE(k.scratch[0].dtype);
  EXPECT_EQ(k.scratch[0].dtype->name, "float32");
  EXPECT_EQ(k.scratch[1].kind, "DMA semaphore");
  EXPECT_EQ(k.scratch[1].memory_space, MemorySpace::Semaphore);

  // Positional arguments, no prefetch operands visible.
  const Extracted p = extract(
      "spec = pltpu.PrefetchScalarGridSpec(2, (4, 4), [pl.BlockSpec((8, 128), lambda i, j, a, b: "
      "(i, j))],\n"
      "                                    pl.BlockSpec((8, 128), lambda i, j, a, b: (i, j)))\n"
      "y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((64, 128), jnp.float32), "
      "grid_spec=spec)\n");
  EXPECT_EQ(p.only().num_scalar_prefetch, 2);
  EXPECT_EQ(p.only().grid.extents, dims({4, 4}));
  ASSERT_EQ(p.only().inputs.size(), 1u);
  EXPECT_EQ(p.only().inputs[0].label, "in 0");
}

TEST(KernelExtractor, PlainGridSpec) {
  const Extracted e = extract(
      "gs = pl.GridSpec(grid=(4,), in_specs=[pl.BlockSpec((256, 128), lambda i: (i, 0))],\n"
      "                 out_specs=pl.BlockSpec((256, 128), lambda i: (i, 0)))\n"
      "def run(x):\n"
      "    return pl.pallas_call(kernel, grid_spec=gs,\n"
      "                          out_shape=jax.ShapeDtypeStruct((1024, 128), jnp.float32))(x)\n");
  const Kernel& k = e.only();
  EXPECT_FALSE(k.prefetch_grid_spec);
  EXPECT_EQ(k.num_scalar_prefetch, 0);
  EXPECT_EQ(k.grid.extents, dims({4}));
  ASSERT_EQ(k.inputs.size(), 1u);
  ASSERT_TRUE(k.inputs[0].block.shape);
  EXPECT_EQ((*k.inputs[0].block.shape)[0].size, 256);
  ASSERT_EQ(k.outputs.size(), 1u);
  EXPECT_EQ(k.outputs[0].array_shape, dims({1024, 128}));
}

TEST(KernelExtractor, BlockSpecForms) {
  const Extracted e = extract(
      "def imap(i, j=0):\n    if i > 0:\n        return (i, j)\n    return i, 0\n\n"
      "def bad_map(i):\n    if i:\n        return (i,)\n    return (i, 0)\n\n"
      "def run(x, y, z, w, v):\n"
      "    return pl.pallas_call(kernel, out_shape=x, grid=(4,), in_specs=[\n"
      "        pl.BlockSpec((None, 128, 256), lambda b: (b, 0, 0)),\n"
      "        pl.BlockSpec(memory_space=pl.ANY),\n"
      "        pl.BlockSpec(memory_space=pltpu.SMEM),\n"
      "        None,\n"
      "        pl.BlockSpec((8, 128), imap, pipeline_mode=pl.Buffered(1)),\n"
      "        pl.BlockSpec(lambda i: (i, 0), (16, 128)),\n"
      "        pl.BlockSpec(block_shape=(8, 128), index_map=bad_map),\n"
      "    ])(x, y, z, w, v, v, v)\n");
  const Kernel& k = e.only();
  ASSERT_EQ(k.inputs.size(), 7u);
  const BlockSpec& squeezed = k.inputs[0].block;
  ASSERT_TRUE(squeezed.shape);
  ASSERT_EQ(squeezed.shape->size(), 3u);
  EXPECT_TRUE((*squeezed.shape)[0].squeezed);
  EXPECT_FALSE((*squeezed.shape)[0].size.has_value());
  EXPECT_EQ((*squeezed.shape)[2].size, 256);
  EXPECT_EQ(squeezed.index_map->arity, 1);
  EXPECT_EQ(squeezed.index_map->result_rank, 3);
  EXPECT_EQ(k.inputs[1].block.memory_space, MemorySpace::Any);
  EXPECT_FALSE(k.inputs[1].block.whole_array);
  EXPECT_FALSE(k.inputs[1].block.shape.has_value());
  EXPECT_EQ(k.inputs[2].block.memory_space, MemorySpace::Smem);
  EXPECT_TRUE(k.inputs[3].block.whole_array);
  const BlockSpec& buffered = k.inputs[4].block;
  EXPECT_EQ(buffered.buffer_count, 1);
  ASSERT_TRUE(buffered.index_map);
  EXPECT_EQ(buffered.index_map->arity, 2);
  EXPECT_EQ(buffered.index_map->required_arity, 1);
  EXPECT_EQ(buffered.index_map->result_rank, 2);
  EXPECT_EQ(e.text(buffered.index_map->result_span), "return (i, j)");
  const BlockSpec& old_order = k.inputs[5].block;  // BlockSpec(index_map, block_shape)
  ASSERT_TRUE(old_order.shape);
  EXPECT_EQ((*old_order.shape)[0].size, 16);
  ASSERT_TRUE(old_order.index_map);
  EXPECT_EQ(old_order.index_map->arity, 1);
  const BlockSpec& keywords = k.inputs[6].block;
  ASSERT_TRUE(keywords.shape);
  EXPECT_EQ((*keywords.shape)[0].size, 8);
  ASSERT_TRUE(keywords.index_map);
  EXPECT_FALSE(keywords.index_map->result_rank.has_value());  // returns disagree
}

TEST(KernelExtractor, ZeroArgumentLambdaIndexMap) {
  // With grid=() an index_map takes no arguments; `lambda: (0, 0)` is the usual spelling.
  const Extracted e = extract(
      "y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),\n"
      "                   out_specs=pl.BlockSpec((8, 128), lambda: (0, 0)))()\n");
  ASSERT_EQ(e.only().outputs.size(), 1u);
  const auto& map = e.only().outputs[0].block.index_map;
  ASSERT_TRUE(map);
  EXPECT_EQ(map->arity, 0);
  EXPECT_EQ(map->required_arity, 0);
  EXPECT_EQ(map->result_rank, 2);
}

TEST(KernelExtractor, OutShapeSingleAndTuple) {
  const Extracted e = extract(
      "def run(x):\n"
      "    return pl.pallas_call(kernel, grid=(2,),\n"
      "        out_shape=(jax.ShapeDtypeStruct((64, 128), jnp.float32),\n"
      "                   jax.ShapeDtypeStruct(shape=(64,), dtype=jnp.int32)),\n"
      "        out_specs=(pl.BlockSpec((32, 128), lambda i: (i, 0)), pl.BlockSpec((32,), lambda i: "
      "(i,))),\n"
      "    )(x)\n");
  const Kernel& k = e.only();
  ASSERT_EQ(k.outputs.size(), 2u);
  EXPECT_EQ(k.outputs[0].label, "out 0");
  EXPECT_EQ(k.outputs[1].label, "out 1");
  EXPECT_EQ(k.outputs[0].array_shape, dims({64, 128}));
  EXPECT_EQ(k.outputs[1].array_shape, dims({64}));
  ASSERT_TRUE(k.outputs[1].dtype);
  EXPECT_EQ(k.outputs[1].dtype->name, "int32");
  ASSERT_TRUE(k.outputs[1].block.shape);
  EXPECT_EQ(k.outputs[1].block.shape->size(), 1u);

  const Extracted u = extract(
      "def run(x):\n    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, "
      "x.dtype))(x)\n");
  ASSERT_EQ(u.only().outputs.size(), 1u);
  EXPECT_FALSE(u.only().outputs[0].array_shape.has_value());
  EXPECT_NE(u.only().outputs[0].unknown_because.find("shape and dtype"), std::string::npos);
  EXPECT_TRUE(u.only().outputs[0].block.whole_array);  // no out_specs: whole array
}

TEST(KernelExtractor, CompilerParamsForms) {
  const Extracted a = extract(call_with(
      "        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", "
      "\"arbitrary\"),\n"
      "                                             vmem_limit_bytes=64 * 1024 * 1024),\n"));
  ASSERT_TRUE(a.only().dimension_semantics);
  EXPECT_EQ(*a.only().dimension_semantics, (std::vector<std::string>{"parallel", "arbitrary"}));
  EXPECT_EQ(a.text(a.only().dimension_semantics_span), "(\"parallel\", \"arbitrary\")");
  EXPECT_EQ(a.only().vmem_limit_bytes, 64 * 1024 * 1024);
  EXPECT_EQ(a.only().backend, Backend::Tpu);

  const Extracted b = extract(call_with(
      "        compiler_params=dict(mosaic=dict(dimension_semantics=[\"parallel\", \"parallel\"],\n"
      "                                         vmem_limit_bytes=1 << 25)),\n"));
  ASSERT_TRUE(b.only().dimension_semantics);
  EXPECT_EQ(b.only().dimension_semantics->size(), 2u);
  EXPECT_EQ(b.only().vmem_limit_bytes, int64_t{1} << 25);

  const Extracted c =
      extract(call_with("        compiler_params={'mosaic': {'dimension_semantics': "
                        "(pltpu.PARALLEL, pltpu.ARBITRARY)}},\n"));
  ASSERT_TRUE(c.only().dimension_semantics);
  EXPECT_EQ(*c.only().dimension_semantics, (std::vector<std::string>{"parallel", "arbitrary"}));
  EXPECT_FALSE(c.only().vmem_limit_bytes.has_value());

  const Extracted d = extract(call_with("        compiler_params=params,\n"));
  EXPECT_FALSE(d.only().dimension_semantics.has_value());
  EXPECT_FALSE(d.only().unknowns.empty());
}

TEST(KernelExtractor, GpuDetection) {
  const Extracted a =
      extract("from jax.experimental.pallas import triton as plgpu\n" +
              call_with("        compiler_params=plgpu.CompilerParams(num_warps=4),\n"));
  EXPECT_EQ(a.only().backend, Backend::TritonGpu);
  const Extracted b =
      extract(call_with("        compiler_params=dict(triton=dict(num_warps=4)),\n"));
  EXPECT_EQ(b.only().backend, Backend::TritonGpu);
  const Extracted c = extract(call_with("        backend='mosaic_gpu',\n"));
  EXPECT_EQ(c.only().backend, Backend::MosaicGpu);
  // A file that imports only a GPU flavour of Pallas: every kernel is a GPU kernel.
  const Extracted d = extract(
      "import jax\nfrom jax.experimental import pallas as pl\nfrom jax.experimental.pallas import "
      "triton as plgpu\n"
      "def k(x_ref, o_ref):\n    pass\n"
      "y = pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct((16, 32), jax.numpy.float32))\n",
      false);
  EXPECT_EQ(d.only().backend, Backend::TritonGpu);
  // The prelude imports pltpu: no compiler params means TPU.
  EXPECT_EQ(extract(call_with("")).only().backend, Backend::Tpu);
}

TEST(KernelExtractor, InterpretAndAliases) {
  const Extracted a =
      extract(call_with("        interpret=True,\n        input_output_aliases={0: 0},\n"));
  EXPECT_EQ(a.only().interpret, std::optional<bool>(true));
  EXPECT_TRUE(a.only().has_input_output_aliases);
  const Extracted b =
      extract(call_with("        interpret=False,\n        input_output_aliases={},\n"));
  EXPECT_EQ(b.only().interpret, std::optional<bool>(false));
  EXPECT_FALSE(b.only().has_input_output_aliases);
  const Extracted c = extract(call_with("        interpret=debug,\n"));
  EXPECT_FALSE(c.only().interpret.has_value());
}

TEST(KernelExtractor, HalfTypedCodeKeepsOtherKernels) {
  const Extracted e = extract(
      "def first(x):\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((16, 128), "
      "jnp.float32))(x)\n\n"
      "def broken(x):\n"
      "    y = pl.pallas_call(kernel, out_shape=)\n"
      "    z = x +\n\n"
      "def good(x):\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), "
      "jnp.float32))(x)\n");
  EXPECT_TRUE(e.model.syntax_errors);
  std::map<std::string, const Kernel*> by_function;
  for (const Kernel& k : e.model.kernels) by_function[k.enclosing_function] = &k;
  ASSERT_TRUE(by_function.count("first"));
  ASSERT_TRUE(by_function.count("good"));
  ASSERT_EQ(by_function["first"]->outputs.size(), 1u);
  EXPECT_EQ(by_function["first"]->outputs[0].array_shape, dims({16, 128}));
  ASSERT_EQ(by_function["good"]->outputs.size(), 1u);
  EXPECT_EQ(by_function["good"]->outputs[0].array_shape, dims({8, 128}));

  // An unclosed bracket swallows what follows into an ERROR node; the call inside is still found.
  const Extracted open = extract(
      "def broken(x):\n"
      "    y = pl.pallas_call(kernel, out_shape=(\n\n"
      "def good(x):\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), "
      "jnp.float32))(x)\n");
  EXPECT_TRUE(open.model.syntax_errors);
  bool found = false;
  for (const Kernel& k : open.model.kernels) {
    found |= k.outputs.size() == 1 && k.outputs[0].array_shape == dims({8, 128});
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace mk::pallas

namespace mk::pallas {
namespace {

TEST(KernelExtractor, ModuleLevelAliasesAreFollowedIntoOtherStatements) {
  // Only statements that mention pallas_call or a module-level alias of it are walked; a use of
  // the alias inside an unrelated function must still be found.
  const Extracted e = extract(
      "from jax.experimental.pallas import pallas_call as pc\n"
      "call = pl.pallas_call\n"
      "def helper(x):\n"
      "    return x + 1\n"
      "def first(x):\n"
      "    return pc(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))(x)\n"
      "def second(x):\n"
      "    return call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))(x)\n");
  ASSERT_EQ(e.model.kernels.size(), 2u);
  EXPECT_EQ(e.model.kernels[0].enclosing_function, "first");
  EXPECT_EQ(e.model.kernels[1].enclosing_function, "second");
}

TEST(KernelExtractor, NamesInsideAnUnwalkedFunctionResolveInItsOwnScope) {
  // create_inputs never mentions pallas_call, yet its locals must not leak to module scope.
  const Extracted e = extract(
      "N = 4096\n"
      "def create_inputs():\n"
      "    N = 256\n"
      "    return (jnp.zeros((N, 128), jnp.float32),)\n"
      "def workload(x):\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((256, 128), jnp.float32),\n"
      "        grid=(2,), in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))],\n"
      "        out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)))(x)\n");
  ASSERT_EQ(e.only().inputs.size(), 1u);
  ASSERT_TRUE(e.only().inputs[0].array_shape);
  EXPECT_EQ((*e.only().inputs[0].array_shape)[0], 256);
}

}  // namespace
}  // namespace mk::pallas
