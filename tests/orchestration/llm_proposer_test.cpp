// The step-by-step LLM proposer over a scripted client: the planner's strategies become the
// ticked checklist, implement sends only the ticked lines (and the user's feedback), malformed
// answers and LLM errors surface as exceptions with a clear message, usage adds up, and the
// debugger gets the test's report and what the code was written from.
#include "agents/orchestration/llm_proposer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/orchestration/expander_factory.h"
#include "knowledge/tpu_generations.h"
#include "tests/agents/scripted_client.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;
using testing::ScriptedClient;

std::string kernel_file() {
  std::ifstream in(fs::path(MK_SOURCE_DIR) / "tests/optimize/kernels/scale_rows.py");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kPlanAnswer =
    "```json\n{\"strategies\": [{\"name\": \"row_block_32\", \"why\": \"Fewer grid steps.\","
    " \"expected_effect\": \"4x fewer steps\"}, {\"name\": \"bf16_inputs\", \"why\": \"Half"
    " the bytes.\", \"expected_effect\": \"less HBM time\"}]}\n```";

std::string user_text(const llm::ChatRequest& request) {
  std::string all;
  for (const auto& m : request.messages)
    if (m.role == llm::Role::User) all += m.text;
  return all;
}

struct Scripted {
  ScriptedClient* client;
  LlmProposer proposer;
};

Scripted scripted(std::vector<std::string> answers) {
  auto client = std::make_unique<ScriptedClient>(std::move(answers));
  ScriptedClient* raw = client.get();
  LlmProposerOptions options;
  options.task_summary = "keep results";
  options.target_facts = "TPU v5e";
  return {raw, LlmProposer(std::move(client), std::move(options))};
}

TEST(LlmProposer, PlanIsTheTickedChecklistOfThePlannersStrategies) {
  auto [client, proposer] = scripted({kPlanAnswer});
  const std::string md = proposer.plan({kernel_file(), "_kernel", "no bf16 please"});
  EXPECT_EQ(ticked_plan_items(md),
            (std::vector<std::string>{"row_block_32: Fewer grid steps. (expected: 4x fewer steps)",
                                      "bf16_inputs: Half the bytes. (expected: less HBM time)"}));
  EXPECT_NE(md.find("> Your feedback: no bf16 please"), std::string::npos);
  ASSERT_EQ(client->requests.size(), 1u);
  EXPECT_EQ(client->requests[0].purpose, "planner");
  EXPECT_NE(user_text(client->requests[0]).find("no bf16 please"), std::string::npos);
  EXPECT_EQ(proposer.llm_calls(), 1);
  EXPECT_GT(proposer.usage().input_tokens, 0);
  EXPECT_GT(proposer.usage().output_tokens, 0);
}

TEST(LlmProposer, ImplementSendsOnlyTheTickedLinesAndReturnsTheWholeFile) {
  const std::string code = kernel_file();
  std::string rewritten = code;
  rewritten.replace(rewritten.find("BLOCK_ROWS = 8\n"), 15, "BLOCK_ROWS = 32\n");
  auto [client, proposer] = scripted({"```python\n" + rewritten + "```"});
  const std::string plan =
      "# plan\n- [ ] bf16_inputs: Half the bytes.\n- [x] row_block_32: Fewer grid steps.\n";
  const Implementation impl = proposer.implement({code, "_kernel", plan, "keep it simple"});
  EXPECT_EQ(impl.code, rewritten);
  EXPECT_EQ(impl.applied, std::vector<std::string>{"row_block_32: Fewer grid steps."});
  ASSERT_EQ(client->requests.size(), 1u);
  EXPECT_EQ(client->requests[0].purpose, "implementer");
  const std::string sent = user_text(client->requests[0]);
  EXPECT_NE(sent.find("row_block_32: Fewer grid steps."), std::string::npos);
  EXPECT_EQ(sent.find("bf16_inputs"), std::string::npos) << "an unticked line was sent";
  EXPECT_NE(sent.find("keep it simple"), std::string::npos);
}

TEST(LlmProposer, NothingTickedAsksNothing) {
  auto [client, proposer] = scripted({});
  const Implementation impl =
      proposer.implement({kernel_file(), "_kernel", "- [ ] row_block_32: x\n", ""});
  EXPECT_EQ(impl.code, kernel_file());
  EXPECT_TRUE(client->requests.empty());
}

TEST(LlmProposer, AMalformedAnswerTwiceIsAClearErrorAndItsTokensCount) {
  auto [client, proposer] = scripted({"I would rather not.", "Still no code, sorry."});
  try {
    proposer.implement({kernel_file(), "_kernel", "- [x] row_block_32: x\n", ""});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("implementer's answer was unusable"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("wrong format twice"), std::string::npos) << e.what();
  }
  EXPECT_EQ(proposer.llm_calls(), 2);
  EXPECT_GT(proposer.usage().output_tokens, 0);
}

TEST(LlmProposer, AnLlmErrorPropagatesWithItsKind) {
  auto [client, proposer] = scripted({});  // no answers: the client throws
  try {
    proposer.plan({kernel_file(), "_kernel", ""});
    FAIL() << "expected an LLM error";
  } catch (const llm::LlmError& e) {
    EXPECT_EQ(e.kind(), llm::ErrorKind::Malformed);
  }
}

TEST(LlmProposer, DebugSendsTheReportAndWhatTheCodeWasWrittenFromAndReturnsTheFix) {
  const std::string origin = kernel_file();
  std::string failing = origin;
  failing.replace(failing.find("BLOCK_ROWS = 8\n"), 15, "BLOCK_ROWS = 12\n");
  auto [client, proposer] =
      scripted({"The rows must be a multiple of 8:\n\n```python\n" + origin + "```\nDone."});
  EXPECT_TRUE(proposer.can_debug());
  const std::string fix = proposer.debug(
      {failing, origin, "_kernel", "lowering: divisible by 8 and 128 (line 9)", 2, 3});
  EXPECT_EQ(fix, origin);
  ASSERT_EQ(client->requests.size(), 1u);
  EXPECT_EQ(client->requests[0].purpose, "debugger");
  const std::string sent = user_text(client->requests[0]);
  EXPECT_NE(sent.find("Fix attempt 2 of 3"), std::string::npos);
  EXPECT_NE(sent.find("divisible by 8 and 128 (line 9)"), std::string::npos);
  EXPECT_NE(sent.find("   9 | BLOCK_ROWS = 12"), std::string::npos) << "the failing file, numbered";
  EXPECT_NE(sent.find("BLOCK_ROWS = 8"), std::string::npos) << "what it was written from";
  EXPECT_EQ(proposer.llm_calls(), 1);
  // Without an origin the prompt says so instead of showing the failing file again.
  auto [again, alone] = scripted({"```python\n" + origin + "```"});
  alone.debug({failing, "", "_kernel", "lowering: x", 1, 3});
  EXPECT_NE(user_text(again->requests[0]).find("is the session's own code"), std::string::npos);
  // The rules do not debug.
  RuleProposer rules;
  EXPECT_FALSE(rules.can_debug());
  EXPECT_THROW(rules.debug({failing, "", "_kernel", "x", 1, 3}), std::runtime_error);
}

TEST(MakeProposer, RulesWithoutAnLlmAndAConfigErrorForABadSpec) {
  const knowledge::TpuGeneration* target = knowledge::find_tpu_generation("v5e");
  ASSERT_TRUE(target);
  ExpanderSetup none;
  EXPECT_EQ(make_proposer(none, *target)->describe(), "rules");
  ExpanderSetup missing;
  missing.llm_spec = "replay:/nonexistent/fixture.json";
  try {
    make_proposer(missing, *target);
    FAIL() << "expected a configuration error";
  } catch (const llm::LlmError& e) {
    EXPECT_EQ(e.kind(), llm::ErrorKind::Config);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/fixture.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace mk::agents
