// Task conventions (JAXBench CONFIG/create_inputs/workload, MaxKernel get_inputs/computation) and
// how the task's inputs describe the operands of kernels called from its entry point.
#include <gtest/gtest.h>

#include <string>

#include "pallas_test_util.h"
#include "source/pallas/kernel_extractor.h"

namespace mk::pallas {
namespace {

using test_util::dims;
using test_util::extract;
using test_util::Extracted;

TEST(TaskConventions, FormFromModuleLevelNames) {
  const Extracted jb = extract(
      "CONFIG = {'M': 1024}\n"
      "def create_inputs(dtype=jnp.float32):\n    pass\n"
      "def workload(x):\n    pass\n"
      "def get_flops():\n    return 0\n");
  EXPECT_EQ(jb.model.task.form(), "jaxbench");
  EXPECT_TRUE(jb.model.task.get_flops);
  EXPECT_FALSE(jb.model.task.tuned_params);
  const Extracted mk =
      extract("def get_inputs():\n    pass\ndef computation(x):\n    pass\nTUNED_PARAMS = {}\n");
  EXPECT_EQ(mk.model.task.form(), "maxkernel");
  EXPECT_TRUE(mk.model.task.tuned_params);
  const Extracted partial = extract("CONFIG = {}\ndef create_inputs():\n    pass\n");
  EXPECT_EQ(partial.model.task.form(), "");
  // A nested `workload` is not a module-level convention.
  const Extracted nested =
      extract("CONFIG = {}\ndef create_inputs():\n    def workload():\n        pass\n");
  EXPECT_EQ(nested.model.task.form(), "");
}

TEST(TaskConventions, TaskInputsDescribeEntryPointOperands) {
  const Extracted jb = extract(
      "CONFIG = {'M': 1024, 'N': 512}\n"
      "def create_inputs():\n"
      "    x = jnp.zeros((CONFIG['M'], CONFIG['N']), jnp.bfloat16)\n"
      "    return x, jnp.ones((CONFIG['N'],), jnp.float32)\n"
      "def workload(x, b):\n"
      "    return pl.pallas_call(kernel, out_shape=x)(b, x)\n");
  const Kernel& k = jb.only();
  ASSERT_EQ(k.inputs.size(), 2u);
  EXPECT_EQ(k.inputs[0].array_shape, dims({512}));  // `b` is create_inputs()[1]
  EXPECT_EQ(k.inputs[1].array_shape, dims({1024, 512}));
  ASSERT_TRUE(k.inputs[1].dtype);
  EXPECT_EQ(k.inputs[1].dtype->name, "bfloat16");
  const Extracted mk = extract(
      "def get_inputs():\n    return [jnp.zeros((8, 128), jnp.int8)]\n"
      "def computation(x: jax.Array):\n    return pl.pallas_call(kernel, out_shape=x)(x)\n"
      "def helper(x):\n    return pl.pallas_call(kernel, out_shape=x)(x)\n");
  ASSERT_EQ(mk.model.kernels.size(), 2u);
  EXPECT_EQ(mk.model.kernels[0].inputs.at(0).array_shape, dims({8, 128}));
  EXPECT_FALSE(mk.model.kernels[1].inputs.at(0).array_shape.has_value());  // not the entry point
}

TEST(TaskConventions, TaskInputRebindingIsNotTheCreatedInput) {
  const Extracted e = extract(
      "def create_inputs():\n    return (jnp.zeros((4096,), jnp.float32),)\n"
      "def workload(x):\n"
      "    x = x.reshape(32, 128)\n"
      "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32), "
      "grid=(4,),\n"
      "        in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],\n"
      "        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))(x)\n");
  ASSERT_EQ(e.only().inputs.size(), 1u);
  EXPECT_NE(e.only().inputs[0].array_shape, dims({4096}));
}

}  // namespace
}  // namespace mk::pallas
