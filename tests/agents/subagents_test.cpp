// The sub-agents against a scripted in-memory client that returns recorded answer texts.
#include "agents/subagents/subagents.h"

#include <gtest/gtest.h>

#include "agents/prompts/prompt_templates.h"

#include "agents_test_util.h"
#include "scripted_client.h"

namespace mk::agents {
namespace {

using testing::read_repo_file;
using testing::ScriptedClient;

AgentContext softmax_context() {
  AgentContext c;
  c.kernel_source = read_repo_file("examples/softmax_rows.py");
  c.kernel_name = "softmax_kernel";
  c.task_summary = "row softmax of a (4096, 96) f32 array";
  c.target_facts = "TPU v5e: 16 MiB scoped VMEM, 197 TF/s bf16, 819 GB/s HBM";
  c.knowledge = {"Blocks of 512+ rows amortise the ~0.35 us per-step overhead."};
  return c;
}

std::string python_answer(const std::string& source) {
  return "Here is the file:\n```python\n" + source + "```\n";
}

const char* kPlanJson =
    "```json\n{\"strategies\": [{\"name\": \"bigger_blocks\", \"why\": \"fewer grid steps\", "
    "\"expected_effect\": \"less per-step overhead\"}]}\n```";

TEST(Planner, ParsesStrategiesAndCarriesUsage) {
  ScriptedClient client({kPlanJson});
  const Plan p = plan(client, softmax_context());
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.strategies.size(), 1u);
  EXPECT_EQ(p.strategies[0].name, "bigger_blocks");
  EXPECT_EQ(p.llm_calls, 1);
  EXPECT_GT(p.usage.input_tokens, 0);
  EXPECT_GT(p.usage.output_tokens, 0);
  EXPECT_EQ(p.prompt_version, prompt_template("planner").version);
  ASSERT_EQ(client.requests.size(), 1u);
  const llm::ChatRequest& r = client.requests[0];
  EXPECT_EQ(r.purpose, "planner");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, llm::Role::System);
  EXPECT_NE(r.messages[1].text.find("BLOCK_ROWS = 256"), std::string::npos);
  EXPECT_NE(r.messages[1].text.find("TPU v5e"), std::string::npos);
  EXPECT_NE(r.messages[1].text.find("[1] Blocks of 512+ rows"), std::string::npos);
}

TEST(Planner, TheDiagnosisGoesInItsOwnSectionAndSaysNoneWithoutOne) {
  ScriptedClient client({kPlanJson, kPlanJson});
  ASSERT_TRUE(plan(client, softmax_context(), "HBM-bound: x re-fetched 4x").ok());
  ASSERT_TRUE(plan(client, softmax_context()).ok());
  const std::string heading = "## Diagnosis: what limits this kernel";
  const std::string& with = client.requests[0].messages[1].text;
  const size_t at = with.find(heading);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(with.find("HBM-bound: x re-fetched 4x"), with.find('\n', at) + 1);
  const std::string& without = client.requests[1].messages[1].text;
  EXPECT_NE(without.find(heading), std::string::npos);
  EXPECT_EQ(without.find("HBM-bound"), std::string::npos);
  EXPECT_NE(without.find("(none)"), std::string::npos);
}

TEST(Planner, OneRetryQuotingTheParseErrorThenAClearError) {
  ScriptedClient client({"I think bigger blocks would help.", "{\"strategies\": \"bigger\"}"});
  const Plan p = plan(client, softmax_context());
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(client.requests.size(), 2u);
  EXPECT_EQ(p.llm_calls, 2);
  // The retry repeats the conversation, the bad answer, and quotes the parse error.
  const llm::ChatRequest& retry = client.requests[1];
  ASSERT_EQ(retry.messages.size(), 4u);
  EXPECT_EQ(retry.messages[2].role, llm::Role::Assistant);
  EXPECT_EQ(retry.messages[2].text, "I think bigger blocks would help.");
  EXPECT_EQ(retry.messages[3].role, llm::Role::User);
  EXPECT_NE(retry.messages[3].text.find("JSON does not parse"), std::string::npos)
      << retry.messages[3].text;
  EXPECT_NE(p.error.find("wrong format twice"), std::string::npos) << p.error;
  EXPECT_NE(p.error.find("non-empty list of strategies"), std::string::npos) << p.error;
}

TEST(Planner, ARetryThatSucceedsIsUsed) {
  ScriptedClient client({"```json\n{\"strategies\": []}\n```", kPlanJson});
  const Plan p = plan(client, softmax_context());
  EXPECT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.llm_calls, 2);
  EXPECT_EQ(p.strategies.size(), 1u);
}

TEST(Planner, ClientErrorsPropagate) {
  ScriptedClient client({});
  EXPECT_THROW(plan(client, softmax_context()), llm::LlmError);
}

TEST(Implementer, ReturnsTheWholeFileForTheChosenStrategy) {
  AgentContext c = softmax_context();
  std::string rewritten = c.kernel_source;
  rewritten.replace(rewritten.find("BLOCK_ROWS = 256"), 16, "BLOCK_ROWS = 512");
  ScriptedClient planner({kPlanJson});
  const Plan p = plan(planner, c);
  ScriptedClient client({python_answer(rewritten)});
  const Code code = implement(client, c, p);
  ASSERT_TRUE(code.ok()) << code.error;
  EXPECT_EQ(code.source, rewritten);
  EXPECT_EQ(code.strategy, "bigger_blocks");
  EXPECT_NE(client.requests[0].messages[1].text.find("bigger_blocks: fewer grid steps"),
            std::string::npos);
  // No strategy 3 in a one-strategy plan: refused without a call.
  ScriptedClient unused({});
  EXPECT_FALSE(implement(unused, c, p, 3).ok());
  EXPECT_TRUE(unused.requests.empty());
}

TEST(Implementer, BrokenPythonTwiceIsAnError) {
  ScriptedClient client({python_answer("def f(:\n  pass\n"), python_answer("x = 1\n")});
  Plan p;
  p.strategies = {{"s", "w", "e"}};
  const Code code = implement(client, softmax_context(), p);
  EXPECT_FALSE(code.ok());
  EXPECT_EQ(client.requests.size(), 2u);
  EXPECT_NE(client.requests[1].messages.back().text.find("does not parse"), std::string::npos);
  EXPECT_NE(code.error.find("no pallas_call"), std::string::npos) << code.error;
}

TEST(Debugger, SeesNumberedCodeTheErrorAndEarlierAttempts) {
  AgentContext c = softmax_context();
  c.attempts = {{"old code", "line 20: block too big", "", "bigger_blocks"}};
  Code failing;
  failing.source = c.kernel_source;
  failing.source.replace(failing.source.find("BLOCK_ROWS = 256"), 16, "BLOCK_ROWS = 100");
  failing.strategy = "bigger_blocks";
  std::string fixed = c.kernel_source;
  ScriptedClient client({python_answer(fixed)});
  const std::string error =
      "lowering: line 23: block shape (100, 96) not divisible by 8 (softmax_rows.py:23)";
  const Code code = debug(client, c, failing, error, 1, 3);
  ASSERT_TRUE(code.ok()) << code.error;
  EXPECT_EQ(code.source, fixed);
  const std::string& prompt = client.requests[0].messages[1].text;
  EXPECT_NE(prompt.find("   8 | BLOCK_ROWS = 100"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find(error), std::string::npos);
  EXPECT_NE(prompt.find("Fix attempt 1 of 3"), std::string::npos);
  EXPECT_NE(prompt.find("line 20: block too big"), std::string::npos);
}

TEST(Debugger, AttemptsAreBoundedByTheCaller) {
  ScriptedClient client({});
  Code failing;
  failing.source = "x = 1\n";
  const Code code = debug(client, softmax_context(), failing, "err", 4, 3);
  EXPECT_FALSE(code.ok());
  EXPECT_NE(code.error.find("outside 1..3"), std::string::npos);
  EXPECT_TRUE(client.requests.empty());
}

TEST(Debugger, AnUnchangedFileIsNotAFix) {
  AgentContext c = softmax_context();
  Code failing;
  failing.source = c.kernel_source;
  ScriptedClient client({python_answer(c.kernel_source), python_answer(c.kernel_source)});
  const Code code = debug(client, c, failing, "err", 1, 2);
  EXPECT_FALSE(code.ok());
  EXPECT_EQ(client.requests.size(), 2u);
  EXPECT_NE(code.error.find("unchanged"), std::string::npos);
}

TEST(Tester, OnlyValidatedExtraShapes) {
  // softmax_context()'s rows: 4096 x 96 inputs (granularities 128 and 32).
  const std::vector<std::vector<int64_t>> inputs = {{4096, 96}};
  ScriptedClient client(
      {"```json\n{\"cases\": [{\"sizes\": {\"4096\": 384}}, "
       "{\"sizes\": {\"96\": 32}, \"why\": \"one lane tile\"}]}\n```"});
  const ExtraCases cases = extra_test_cases(client, softmax_context(), inputs, 4);
  ASSERT_TRUE(cases.ok()) << cases.error;
  ASSERT_EQ(cases.shapes.size(), 2u);
  EXPECT_EQ(cases.shapes[0].sizes, (std::map<int64_t, int64_t>{{4096, 384}}));
  EXPECT_EQ(cases.shapes[1].why, "one lane tile");
  const std::string& prompt = client.requests[0].messages[0].text;
  EXPECT_NE(prompt.find("at most 4 cases"), std::string::npos);
  EXPECT_NE(client.requests[0].messages[1].text.find(
                "[4096, 96]; sizes: 4096 (multiples of 128), 96 (multiples of 32)"),
            std::string::npos);

  // An unfair shape (not a multiple of 4096's granularity), then tolerances: both refused.
  ScriptedClient bad(
      {"{\"cases\": [{\"sizes\": {\"4096\": 4000}}]}", "{\"tolerances\": {\"atol\": 1}}"});
  const ExtraCases rejected = extra_test_cases(bad, softmax_context(), inputs, 4);
  EXPECT_FALSE(rejected.ok());
  EXPECT_TRUE(rejected.shapes.empty());
  ASSERT_EQ(bad.requests.size(), 2u);
  EXPECT_NE(bad.requests[1].messages.back().text.find("not a multiple of 128"), std::string::npos);
}

TEST(Autotuner, WorksWithoutAnLlm) {
  const TuningSpace space = tuning_space(nullptr, softmax_context(), "");
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(space.llm_calls, 0);
  EXPECT_EQ(space.worker_space,
            nlohmann::json::parse(R"({"BLOCK_ROWS": [256, 512, 128, 1024, 64]})"));
}

TEST(Autotuner, TheLlmMayWidenButNotBreakTheSpace) {
  // 2048 rows divide 4096 and are a multiple of 8; 100 is neither; 4096 is the whole array.
  ScriptedClient client({"```json\n{\"extra_values\": {\"BLOCK_ROWS\": [2048, 100, 4096]}}\n```"});
  const TuningSpace space = tuning_space(&client, softmax_context(), "median 0.4 ms", 16);
  ASSERT_TRUE(space.ok()) << space.error;
  EXPECT_EQ(space.llm_values_added, 2);
  EXPECT_EQ(space.llm_values_rejected, 1);
  const auto values = space.worker_space["BLOCK_ROWS"];
  EXPECT_EQ(values[0], 256);  // current first
  EXPECT_NE(std::find(values.begin(), values.end(), 2048), values.end());
  EXPECT_NE(std::find(values.begin(), values.end(), 4096), values.end());
  EXPECT_EQ(std::find(values.begin(), values.end(), 100), values.end());
  EXPECT_NE(client.requests[0].messages[1].text.find("BLOCK_ROWS (module constant, now 256)"),
            std::string::npos);
  EXPECT_NE(client.requests[0].messages[1].text.find("median 0.4 ms"), std::string::npos);
}

TEST(Autotuner, NewParametersFromTheLlmAreRefused) {
  ScriptedClient client({"{\"extra_values\": {\"NUM_WARPS\": [4]}}", "{\"extra_values\": {}}"});
  const TuningSpace space = tuning_space(&client, softmax_context(), "");
  EXPECT_TRUE(space.ok()) << space.error;
  EXPECT_EQ(client.requests.size(), 2u);
  EXPECT_NE(client.requests[1].messages.back().text.find("`NUM_WARPS` is not a parameter"),
            std::string::npos);
  EXPECT_EQ(space.llm_values_added, 0);
}

TEST(ProfileAnalyst, BottleneckAndNextStrategies) {
  ScriptedClient client(
      {"```json\n{\"bottleneck\": \"grid_overhead\", \"evidence\": \"16 steps of 2 us\", "
       "\"next_strategies\": [{\"name\": \"bigger_blocks\", \"why\": \"fewer steps\", "
       "\"expected_effect\": \"-30%\"}]}\n```"});
  const ProfileAnalysis a =
      analyze_profile(client, softmax_context(),
                      {"grid 16, 2.1 us/step", "grid overhead-bound (3% of the roofline)", ""});
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.analysis.bottleneck, "grid_overhead");
  EXPECT_EQ(a.analysis.next_strategies[0].name, "bigger_blocks");
  const std::string& sent = client.requests[0].messages[1].text;
  EXPECT_NE(sent.find("grid 16, 2.1 us/step"), std::string::npos);
  EXPECT_NE(sent.find("## Rule-based diagnosis\ngrid overhead-bound (3% of the roofline)"),
            std::string::npos);
  EXPECT_NE(sent.find("## Device profile\n(none)"), std::string::npos);
}

TEST(Context, TrimmedToTheBudgetInTheRequest) {
  AgentContext c = softmax_context();
  for (int i = 0; i < 20; ++i)
    c.attempts.push_back({std::string(4000, 'x'), "e", "", "s" + std::to_string(i)});
  c.token_budget = 6000;
  ScriptedClient client({kPlanJson});
  ASSERT_TRUE(plan(client, c).ok());
  size_t chars = 0;
  for (const auto& m : client.requests[0].messages) chars += m.text.size();
  EXPECT_LE(static_cast<int>(chars / 4), c.token_budget);
  EXPECT_NE(client.requests[0].messages[1].text.find("s19"), std::string::npos);  // newest kept
  EXPECT_EQ(client.requests[0].messages[1].text.find(": s0\n"), std::string::npos);
}

}  // namespace
}  // namespace mk::agents
