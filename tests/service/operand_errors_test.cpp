// Lowering errors that name an operand, as real JAX (jax.export for TPU on CPU) wrote them, are
// mapped to the in_specs / out_specs entry holding that BlockSpec.
#include "service/operand_errors.h"

#include <gtest/gtest.h>

#include <string>

#include "source/pallas/kernel_extractor.h"
#include "source/syntax/python_tree.h"

namespace mk::service {
namespace {

// Captured from jax.export(jax.jit(f), platforms=["tpu"]) with JAX 0.8 on this machine.
const std::string kInput1 =
    "The Pallas TPU lowering currently requires that the last two dimensions of your block shape "
    "are divisible by 8 and 128 respectively, or be equal to the respective dimensions of the "
    "overall array. Block spec for args[1] in pallas_call k2 at /tmp/wr/b/cap.py:7 has block "
    "shape (Blocked(block_size=100), Blocked(block_size=128)), array shape (1024, 1024), and "
    "index_map { lambda ; a:i32[]. let  in (a, 0:i32[]) }, in memory space "
    "<MemorySpace.DEFAULT: 'default'>.\n"
    "See details at https://docs.jax.dev/en/latest/pallas/grid_blockspec.html#pallas-blockspec";
const std::string kInput0 =
    "The Pallas TPU lowering currently requires that the last two dimensions of your block shape "
    "are divisible by 8 and 128 respectively, or be equal to the respective dimensions of the "
    "overall array. Block spec for args[0] in pallas_call k2 at /tmp/wr/b/cap.py:7 has block "
    "shape (Blocked(block_size=100), Blocked(block_size=128)), array shape (1024, 1024), and "
    "index_map { lambda ; a:i32[]. let  in (a, 0:i32[]) }, in memory space "
    "<MemorySpace.DEFAULT: 'default'>.";
const std::string kSingleOutput =
    "The Pallas TPU lowering currently requires that the last two dimensions of your block shape "
    "are divisible by 8 and 128 respectively, or be equal to the respective dimensions of the "
    "overall array. Block spec for outputs in pallas_call k2 at /tmp/wr/b/cap.py:7 has block "
    "shape (Blocked(block_size=100), Blocked(block_size=1024)), array shape (1024, 1024), and "
    "index_map { lambda ; a:i32[]. let  in (a, 0:i32[]) }, in memory space "
    "<MemorySpace.DEFAULT: 'default'>.";
const std::string kTupleOutput1 =
    "The Pallas TPU lowering currently requires that the last two dimensions of your block shape "
    "are divisible by 8 and 128 respectively, or be equal to the respective dimensions of the "
    "overall array. Block spec for outputs[1] in pallas_call k2o at /tmp/wr/b/cap.py:9 has block "
    "shape (Blocked(block_size=100), Blocked(block_size=1024)), array shape (1024, 1024), and "
    "index_map { lambda ; a:i32[]. let  in (a, 0:i32[]) }, in memory space "
    "<MemorySpace.DEFAULT: 'default'>.";
// With one scalar-prefetch operand, in_specs[1] is args[2].
const std::string kPrefetchInput =
    "The Pallas TPU lowering currently requires that the last two dimensions of your block shape "
    "are divisible by 8 and 128 respectively, or be equal to the respective dimensions of the "
    "overall array. Block spec for args[2] in pallas_call kp at /tmp/wr/b/cap2.py:5 has block "
    "shape (Blocked(block_size=100), Blocked(block_size=128)), array shape (1024, 1024), and "
    "index_map { lambda ; a:i32[] b:Ref<smem>{i32[1]}. let  in (a, 0:i32[]) }";
// Errors that name no operand stay where the worker put them.
const std::string kBroadcast =
    "add got incompatible shapes for broadcasting: (128, 1024), (100, 128).";

TEST(OperandErrors, ReadsTheOperandAndKernelFromRealMessages) {
  using Role = NamedOperand::Role;
  EXPECT_EQ(operand_named_in(kInput1), (NamedOperand{Role::Input, 1, "k2", 7}));
  EXPECT_EQ(operand_named_in(kInput0), (NamedOperand{Role::Input, 0, "k2", 7}));
  EXPECT_EQ(operand_named_in(kSingleOutput), (NamedOperand{Role::Output, 0, "k2", 7}));
  EXPECT_EQ(operand_named_in(kTupleOutput1), (NamedOperand{Role::Output, 1, "k2o", 9}));
  EXPECT_EQ(operand_named_in(kPrefetchInput), (NamedOperand{Role::Input, 2, "kp", 5}));
  EXPECT_EQ(operand_named_in(kBroadcast), std::nullopt);
}

struct Parsed {
  std::string text;
  pallas::PallasModel model;
  text::LineIndex lines;
  explicit Parsed(std::string source) : text(std::move(source)), lines(text) {
    syntax::PythonTree tree;
    tree.parse(text);
    model = pallas::extract_pallas_model(tree.root(), text);
  }
  int line_of(std::string_view needle) const {
    return static_cast<int>(lines.line_of_offset(text.find(needle)));
  }
};

// Lines 7 and 9 (1-based) are the kernels' defs, as in the captured messages.
const std::string kSource =
    "import jax\n"
    "import jax.numpy as jnp\n"
    "from jax.experimental import pallas as pl\n"
    "from jax.experimental.pallas import tpu as pltpu\n"
    "A = jax.ShapeDtypeStruct((1024, 1024), jnp.float32)\n"
    "\n"
    "def k2(x_ref, y_ref, o_ref): pass\n"
    "\n"
    "def k2o(x_ref, o_ref, p_ref): pass\n"
    "\n"
    "def in_specs_case(x, y):\n"
    "    return pl.pallas_call(k2, out_shape=A, grid=(8,),\n"
    "        in_specs=[pl.BlockSpec((128, 1024), lambda i: (i, 0)),\n"
    "                  pl.BlockSpec((100, 128), lambda i: (i, 0))],\n"
    "        out_specs=pl.BlockSpec((100, 1024), lambda i: (i, 0)))(x, y)\n"
    "\n"
    "def tuple_case(x):\n"
    "    return pl.pallas_call(k2o, out_shape=(A, A), grid=(8,),\n"
    "        in_specs=[pl.BlockSpec((128, 1024), lambda i: (i, 0))],\n"
    "        out_specs=(pl.BlockSpec((128, 1024), lambda i: (i, 0)),\n"
    "                   pl.BlockSpec((100, 1024), lambda i: (i, 0))))(x)\n";

TEST(OperandErrors, PutsTheErrorOnTheEntryWithTheKernelAsRelated) {
  const Parsed p(kSource);
  ASSERT_EQ(p.model.kernels.size(), 2u);
  struct Case {
    const std::string* message;
    const char* entry;  // text that starts the entry's line
    int def_line;       // 1-based
    int call_line;
  };
  const int call1 = p.line_of("pl.pallas_call(k2,") + 1;
  const int call2 = p.line_of("pl.pallas_call(k2o,") + 1;
  for (const Case& c : {Case{&kInput1, "pl.BlockSpec((100, 128)", 7, call1},
                        Case{&kInput0, "in_specs=[pl.BlockSpec((128, 1024)", 7, call1},
                        Case{&kSingleOutput, "out_specs=pl.BlockSpec((100, 1024)", 7, call1},
                        Case{&kTupleOutput1, "         pl.BlockSpec((100, 1024)", 9, call2}}) {
    Finding f;
    f.line = 6;  // where the worker's first location put it
    ASSERT_TRUE(place_on_operand(f, *c.message, p.model, p.lines)) << c.entry;
    EXPECT_EQ(f.line, p.line_of(c.entry)) << c.entry;
    ASSERT_TRUE(f.span);
    EXPECT_EQ(p.text.substr(f.span->start, 12), "pl.BlockSpec") << c.entry;
    ASSERT_EQ(f.related.size(), 2u);
    EXPECT_EQ(f.related[0].line, c.def_line);
    EXPECT_EQ(f.related[1].line, c.call_line);
  }
  Finding untouched;
  untouched.line = 6;
  EXPECT_FALSE(place_on_operand(untouched, kBroadcast, p.model, p.lines));
  EXPECT_EQ(untouched.line, 6);
  EXPECT_FALSE(untouched.span);
}

TEST(OperandErrors, ASpecNamedByAVariableGoesOnItsEntryInTheList) {
  const Parsed p(
      "import jax\nimport jax.numpy as jnp\n"
      "from jax.experimental import pallas as pl\n"
      "\n"
      "\n"
      "\n"
      "def k2(x_ref, y_ref, o_ref): pass\n"
      "def f(x, y):\n"
      "    spec = pl.BlockSpec((100, 128), lambda i: (i, 0))\n"
      "    return pl.pallas_call(k2, out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),\n"
      "        grid=(8,),\n"
      "        in_specs=[spec,\n"
      "                  spec],\n"
      "        out_specs=spec)(x, y)\n");
  Finding in1, out;
  ASSERT_TRUE(place_on_operand(in1, kInput1, p.model, p.lines));
  EXPECT_EQ(in1.line, p.line_of("                  spec],"));
  EXPECT_EQ(p.text.substr(in1.span->start, in1.span->end - in1.span->start), "spec");
  ASSERT_TRUE(place_on_operand(out, kSingleOutput, p.model, p.lines));
  EXPECT_EQ(out.line, p.line_of("out_specs=spec"));
}

TEST(OperandErrors, ScalarPrefetchOperandsAreCountedBeforeTheSpecs) {
  const Parsed p(
      "import jax\nimport jax.numpy as jnp\n"
      "from jax.experimental import pallas as pl\n"
      "from jax.experimental.pallas import tpu as pltpu\n"
      "def kp(n_ref, x_ref, y_ref, o_ref): pass\n"
      "def f(n, x, y):\n"
      "    return pl.pallas_call(kp, out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),\n"
      "        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(8,),\n"
      "            in_specs=[pl.BlockSpec((128, 1024), lambda i, n: (i, 0)),\n"
      "                      pl.BlockSpec((100, 128), lambda i, n: (i, 0))],\n"
      "            out_specs=pl.BlockSpec((128, 1024), lambda i, n: (i, 0))))(n, x, y)\n");
  Finding f;
  ASSERT_TRUE(place_on_operand(f, kPrefetchInput, p.model, p.lines));
  EXPECT_EQ(f.line, p.line_of("pl.BlockSpec((100, 128)"));
  ASSERT_FALSE(f.related.empty());
  EXPECT_EQ(f.related[0].line, 5);
}

}  // namespace
}  // namespace mk::service
