#include "agents/subagents/answer_parsers.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

const char* kKernelFile =
    "import jax\n"
    "from jax.experimental import pallas as pl\n"
    "\n"
    "def k(x_ref, o_ref):\n"
    "    o_ref[...] = x_ref[...] * 2\n"
    "\n"
    "def f(x):\n"
    "    return pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)\n";

std::string fenced(const std::string& tag, const std::string& body) {
  return "Here you go:\n```" + tag + "\n" + body + "```\nDone.";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const AnswerFormatError& e) {
    return e.what();
  }
  return "";
}

TEST(PythonAnswer, TakesTheWholeFileFromThePythonFence) {
  EXPECT_EQ(parse_python_file_answer(fenced("python", kKernelFile)), kKernelFile);
  EXPECT_EQ(parse_python_file_answer(fenced("py", kKernelFile)), kKernelFile);
  // Prose with a short snippet first: the longest python block is the file.
  EXPECT_EQ(parse_python_file_answer("Change `x`:\n```python\nx = 1\n```\n" +
                                     fenced("python", kKernelFile)),
            kKernelFile);
}

TEST(PythonAnswer, RejectsAMissingFence) {
  EXPECT_NE(error_of([] { parse_python_file_answer(kKernelFile); }).find("no ```python fenced"),
            std::string::npos);
}

TEST(PythonAnswer, RejectsAWrongLanguageTag) {
  EXPECT_NE(error_of([] {
              parse_python_file_answer(fenced("cpp", kKernelFile));
            }).find("tagged `cpp`, not `python`"),
            std::string::npos);
}

TEST(PythonAnswer, RejectsBrokenPythonWithItsLine) {
  std::string broken = kKernelFile;
  broken.replace(broken.find("o_ref[...] = x_ref[...] * 2"), 27, "o_ref[...] = (x_ref[...] * 2");
  const std::string e = error_of([&] { parse_python_file_answer(fenced("python", broken)); });
  EXPECT_NE(e.find("does not parse"), std::string::npos) << e;
  EXPECT_NE(e.find("line "), std::string::npos) << e;
}

TEST(PythonAnswer, RejectsAFileWithoutPallasCall) {
  const std::string e = error_of([] {
    parse_python_file_answer(fenced("python", "import jax\n# pallas_call in a comment\nx = 1\n"));
  });
  EXPECT_NE(e.find("no pallas_call"), std::string::npos) << e;
}

TEST(PythonAnswer, RejectsAnUnclosedFence) {
  EXPECT_NE(error_of([] {
              parse_python_file_answer(std::string("```python\n") + kKernelFile);
            }).find("never closed"),
            std::string::npos);
}

const char* kPlan =
    R"({"strategies": [{"name": "bigger_blocks", "why": "grid overhead", "expected_effect": "-20%"},
                       {"name": "f32_acc", "why": "precision", "expected_effect": "same speed"}]})";

TEST(PlanAnswer, ParsesFencedAndBareJson) {
  auto s = parse_plan_answer(fenced("json", kPlan));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "bigger_blocks");
  EXPECT_EQ(s[1].expected_effect, "same speed");
  EXPECT_EQ(parse_plan_answer(kPlan).size(), 2u);
}

TEST(PlanAnswer, RejectsInvalidJson) {
  const std::string e = error_of([] { parse_plan_answer(fenced("json", "{\"strategies\": [")); });
  EXPECT_NE(e.find("JSON does not parse"), std::string::npos) << e;
}

TEST(PlanAnswer, RejectsJsonOfTheWrongShape) {
  EXPECT_NE(error_of([] { parse_plan_answer(R"({"steps": []})"); }).find("no `strategies`"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_plan_answer(R"({"strategies": []})"); }).find("non-empty"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_plan_answer(R"({"strategies": [{"name": "x", "why": "y"}]})");
            }).find("`expected_effect` must be a non-empty string"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_plan_answer(R"(["a"])"); }).find("one JSON object"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { parse_plan_answer(fenced("yaml", "strategies: []\n")); }).find("not `json`"),
      std::string::npos);
}

TEST(ShapesAnswer, AcceptsPositiveShapesWithinTheBound) {
  auto shapes = parse_shapes_answer(R"({"shapes": [[8, 128], [1000, 96]]})", 4);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[1], (std::vector<int64_t>{1000, 96}));
}

TEST(ShapesAnswer, RejectsBadDimsAndTooManyShapes) {
  EXPECT_NE(error_of([] {
              parse_shapes_answer(R"({"shapes": [[8, 0]]})", 4);
            }).find("shapes[0][1] must be an integer from 1"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { parse_shapes_answer(R"({"shapes": [[8, -3]]})", 4); }).find("shapes[0][1]"),
      std::string::npos);
  EXPECT_NE(
      error_of([] { parse_shapes_answer(R"({"shapes": [[8, 1.5]]})", 4); }).find("shapes[0][1]"),
      std::string::npos);
  EXPECT_NE(
      error_of([] { parse_shapes_answer(R"({"shapes": [[1], [2], [3]]})", 2); }).find("at most 2"),
      std::string::npos);
  // The tester may not smuggle in a reference or tolerances: only `shapes` is read, and it is
  // required.
  EXPECT_NE(error_of([] {
              parse_shapes_answer(R"({"reference": "def f(x): return x"})", 2);
            }).find("`shapes` must be"),
            std::string::npos);
}

TEST(ExtraValuesAnswer, OnlyKnownParametersAndPositiveInts) {
  auto v = parse_extra_values_answer(R"({"extra_values": {"BLOCK_M": [64, 2048]}})", {"BLOCK_M"});
  EXPECT_EQ(v["BLOCK_M"], (std::vector<int64_t>{64, 2048}));
  EXPECT_TRUE(parse_extra_values_answer(R"({"extra_values": {}})", {"BLOCK_M"}).empty());
  EXPECT_NE(error_of([] {
              parse_extra_values_answer(R"({"extra_values": {"NEW": [1]}})", {"BLOCK_M"});
            }).find("`NEW` is not a parameter"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_extra_values_answer(R"({"extra_values": {"BLOCK_M": ["big"]}})", {"BLOCK_M"});
            }).find("extra_values.BLOCK_M[0]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_extra_values_answer(R"({"extra_values": {"BLOCK_M": [1,2,3,4,5]}})",
                                        {"BLOCK_M"}, 4);
            }).find("at most 4"),
            std::string::npos);
}

TEST(AnalysisAnswer, ParsesAndValidates) {
  auto a = parse_analysis_answer(
      R"({"bottleneck": "memory_bandwidth", "evidence": "AI 0.17 flop/byte",
          "next_strategies": [{"name": "fuse", "why": "less traffic", "expected_effect": "2x"}]})");
  EXPECT_EQ(a.bottleneck, "memory_bandwidth");
  EXPECT_EQ(a.evidence, "AI 0.17 flop/byte");
  ASSERT_EQ(a.next_strategies.size(), 1u);
  EXPECT_NE(error_of([] {
              parse_analysis_answer(R"({"next_strategies": []})");
            }).find("`bottleneck` must be a non-empty string"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_analysis_answer(R"({"bottleneck": "compute"})");
            }).find("no `next_strategies`"),
            std::string::npos);
}

}  // namespace
}  // namespace mk::agents
