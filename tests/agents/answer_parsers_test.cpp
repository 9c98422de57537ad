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

// A task of 512 x 128 inputs (granularity 128 for both sizes) and one of 72 rows (granularity 8).
const std::vector<int64_t> kTaskSizes = {512, 128, 72};

TEST(ShapeCasesAnswer, AcceptsFairShapesOfTheTaskSizes) {
  auto cases = parse_shape_cases_answer(
      R"({"cases": [{"sizes": {"512": 384}, "why": "a partial last block"},
                    {"sizes": {"512": 128, "72": 8}}]})",
      kTaskSizes, 4);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].name, "tester_1");
  EXPECT_EQ(cases[0].sizes, (std::map<int64_t, int64_t>{{512, 384}}));
  EXPECT_EQ(cases[0].why, "a partial last block");
  EXPECT_EQ(cases[1].sizes, (std::map<int64_t, int64_t>{{72, 8}, {512, 128}}));
}

TEST(ShapeCasesAnswer, RejectsUnfairShapesAndTooManyCases) {
  auto error = [](const std::string& answer, size_t max = 4) {
    return error_of([&] { parse_shape_cases_answer(answer, kTaskSizes, max); });
  };
  EXPECT_NE(error(R"({"cases": [{"sizes": {"512": 0}}]})").find("cases[0].sizes.512 must be"),
            std::string::npos);
  EXPECT_NE(error(R"({"cases": [{"sizes": {"512": 1.5}}]})").find("cases[0].sizes.512"),
            std::string::npos);
  EXPECT_NE(error(R"({"cases": [{"sizes": {"rows": 8}}]})").find("`rows` is not a size"),
            std::string::npos);
  EXPECT_NE(error(R"({"cases": [{"sizes": {"96": 8}}]})").find("96 is not a size of the task"),
            std::string::npos);
  // Larger than the task's own: the task's shape is the largest checked.
  EXPECT_NE(error(R"({"cases": [{"sizes": {"512": 1024}}]})").find("larger than the task's own"),
            std::string::npos);
  // Not a multiple of the size's granularity (a kernel for 512 rows may assume multiples of 128).
  EXPECT_NE(error(R"({"cases": [{"sizes": {"512": 200}}]})").find("not a multiple of 128"),
            std::string::npos);
  EXPECT_NE(error(R"({"cases": [{"sizes": {"512": 512}}]})").find("the task's own shape"),
            std::string::npos);
  EXPECT_NE(error(R"({"cases": [{"sizes": {"512": 128}}, {"sizes": {"512": 256}}]})", 1)
                .find("at most 1"),
            std::string::npos);
  // The tester may not smuggle in a reference or tolerances: only `cases` is read, and it is
  // required.
  EXPECT_NE(error(R"({"reference": "def f(x): return x", "rtol": 1})").find("`cases` must be"),
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
