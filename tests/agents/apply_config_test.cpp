#include <gtest/gtest.h>

#include "agents/tuning/python_source.h"
#include "agents/tuning/search_space.h"
#include "agents_test_util.h"

namespace mk::agents {
namespace {

using nlohmann::json;
using testing::read_repo_file;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ApplyConfig, ModuleConstantIsReplacedAndNothingElse) {
  const std::string source = read_repo_file("examples/softmax_rows.py");
  EXPECT_EQ(apply_config(source, {{"BLOCK_ROWS", 128}}),
            replaced(source, "BLOCK_ROWS = 256", "BLOCK_ROWS = 128"));
}

TEST(ApplyConfig, TupleAssignedConstant) {
  const std::string source = read_repo_file("tests/corpus/good/tpu_column_sum_reduction.py");
  EXPECT_EQ(apply_config(source, {{"BN", 1024}}),
            replaced(source, "BM, BN = 1024, 512", "BM, BN = 1024, 1024"));
  const ModuleConstants constants = read_module_constants(source);
  bool found = false;
  for (const auto& b : constants.bindings) {
    if (b.name == "BN") found = b.from_tuple;
  }
  EXPECT_TRUE(found);
}

TEST(ApplyConfig, TunedParamsEntryIsReplaced) {
  const std::string source = read_repo_file("examples/matmul_tiled.py");
  EXPECT_EQ(apply_config(source, {{"block_m", 256}, {"block_k", 1024}}),
            replaced(source, R"({"block_m": 512, "block_n": 512, "block_k": 512})",
                     R"({"block_m": 256, "block_n": 512, "block_k": 1024})"));
}

TEST(ApplyConfig, TunedParamsEntryIsAddedOnOneLine) {
  const std::string source = read_repo_file("examples/matmul_tiled.py");
  EXPECT_EQ(apply_config(source, {{"num_stages", 3}}),
            replaced(source, R"("block_k": 512})", R"("block_k": 512, "num_stages": 3})"));
}

TEST(ApplyConfig, TunedParamsEntryIsAddedToAMultilineDict) {
  const std::string source = read_repo_file("tests/corpus/good/tpu_matmul_bf16_jaxbench_tuned.py");
  const std::string out = apply_config(source, {{"unroll", true}});
  EXPECT_EQ(out, replaced(source, "    \"vmem_limit_bytes\": 64 * 1024 * 1024,\n",
                          "    \"vmem_limit_bytes\": 64 * 1024 * 1024,\n    \"unroll\": True,\n"));
  EXPECT_TRUE(check_python_syntax(out).ok);
}

TEST(ApplyConfig, RoundTripRestoresTheSourceByteForByte) {
  for (const char* path : {"examples/softmax_rows.py", "examples/matmul_tiled.py",
                           "tests/corpus/good/tpu_column_sum_reduction.py",
                           "tests/corpus/good/tpu_matmul_bf16_acc.py"}) {
    const std::string source = read_repo_file(path);
    for (const TunableParam& p : derive_search_space(source)) {
      for (const json& v : p.values) {
        const std::string changed = apply_config(source, {{p.name, v}});
        EXPECT_EQ(changed == source, v == p.current) << path << " " << p.name;
        EXPECT_EQ(apply_config(changed, {{p.name, p.current}}), source) << path << " " << p.name;
      }
    }
  }
}

TEST(ApplyConfig, UnknownNameIsAClearError) {
  const std::string source = read_repo_file("examples/softmax_rows.py");  // no TUNED_PARAMS
  try {
    apply_config(source, {{"BLOCK_COLS", 128}});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("`BLOCK_COLS` is neither a module-level constant nor a "
                                         "TUNED_PARAMS key"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(apply_config(source, json::array({1, 2})), std::invalid_argument);
}

TEST(ApplyConfig, ValuesBecomePythonLiterals) {
  EXPECT_EQ(python_literal(json(true)), "True");
  EXPECT_EQ(python_literal(json(nullptr)), "None");
  EXPECT_EQ(python_literal(json(0.5)), "0.5");
  EXPECT_EQ(python_literal(json(2.0)), "2.0");
  EXPECT_EQ(python_literal(json("a\"b")), "\"a\\\"b\"");
  EXPECT_EQ(python_literal(json::parse(R"([8, [1, "x"]])")), "[8, [1, \"x\"]]");
  EXPECT_EQ(python_literal(json::parse(R"({"k": false})")), "{\"k\": False}");
  const std::string source = "X = 1\n";
  EXPECT_EQ(apply_config(source, {{"X", "parallel"}}), "X = \"parallel\"\n");
}

}  // namespace
}  // namespace mk::agents
