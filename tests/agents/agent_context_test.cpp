#include "agents/subagents/agent_context.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

AgentContext big_context() {
  AgentContext c;
  c.kernel_source = std::string(4000, 'k');  // ~1000 tokens
  c.kernel_name = "kern";
  c.task_summary = "matmul 2048^3 bf16";
  c.target_facts = "v5e: 16 MiB VMEM";
  for (int i = 0; i < 4; ++i)
    c.knowledge.push_back("passage " + std::to_string(i) + std::string(800, 'p'));
  for (int i = 0; i < 4; ++i) {
    c.attempts.push_back(
        {std::string(800, 'c'), "err " + std::to_string(i), "", "s" + std::to_string(i)});
  }
  c.token_budget = 100000;
  return c;
}

TEST(AgentContext, ApproxTokensIsCharsOverFour) {
  EXPECT_EQ(approx_tokens(""), 0);
  EXPECT_EQ(approx_tokens("abcd"), 1);
  EXPECT_EQ(approx_tokens("abcde"), 2);
}

TEST(AgentContext, EverythingStaysWhenItFits) {
  const TrimmedContext t = trim_to_budget(big_context(), 100);
  EXPECT_EQ(t.context.attempts.size(), 4u);
  EXPECT_EQ(t.context.knowledge.size(), 4u);
  EXPECT_FALSE(t.over_budget);
}

TEST(AgentContext, OldestAttemptsGoFirstThenLastPassages) {
  AgentContext c = big_context();
  const int full = trim_to_budget(c, 0).tokens;
  // Room for everything but ~2.5 attempts.
  c.token_budget = full - 550;
  TrimmedContext t = trim_to_budget(c, 0);
  EXPECT_EQ(t.dropped_attempts, 3);
  ASSERT_EQ(t.context.attempts.size(), 1u);
  EXPECT_EQ(t.context.attempts[0].strategy, "s3");  // the newest survives
  EXPECT_EQ(t.context.knowledge.size(), 4u);
  EXPECT_LE(t.tokens, c.token_budget);

  // Less room: every attempt goes, then passages from the end (one passage is ~200 tokens).
  AgentContext without_attempts = c;
  without_attempts.attempts.clear();
  c.token_budget = trim_to_budget(without_attempts, 0).tokens - 100;
  t = trim_to_budget(c, 0);
  EXPECT_EQ(t.context.attempts.size(), 0u);
  ASSERT_EQ(t.context.knowledge.size(), 3u);
  EXPECT_EQ(t.context.knowledge[0].rfind("passage 0", 0), 0u);  // the best passage stays
  EXPECT_LE(t.tokens, c.token_budget);
}

TEST(AgentContext, ReservedTokensCountAgainstTheBudget) {
  AgentContext c = big_context();
  const int full = trim_to_budget(c, 0).tokens;
  c.token_budget = full;
  EXPECT_EQ(trim_to_budget(c, 0).dropped_attempts, 0);
  EXPECT_GT(trim_to_budget(c, 300).dropped_attempts, 0);
}

TEST(AgentContext, TheKernelIsNeverDropped) {
  AgentContext c = big_context();
  c.token_budget = 50;  // less than the kernel alone
  const TrimmedContext t = trim_to_budget(c, 0);
  EXPECT_EQ(t.context.kernel_source, c.kernel_source);
  EXPECT_TRUE(t.context.attempts.empty());
  EXPECT_TRUE(t.context.knowledge.empty());
  EXPECT_TRUE(t.over_budget);
}

TEST(AgentContext, ValuesRenderPassagesAndAttempts) {
  AgentContext c;
  c.kernel_source = "src";
  c.knowledge = {"first", "second"};
  c.attempts = {{"code1", "line 3: bad block", "", "bigger blocks"}};
  auto v = context_values(c);
  EXPECT_EQ(v["knowledge"], "[1] first\n\n[2] second");
  EXPECT_NE(v["attempts"].find("### Attempt 1: bigger blocks\nerror:\nline 3: bad block"),
            std::string::npos);
  EXPECT_NE(v["attempts"].find("```python\ncode1\n```"), std::string::npos);
  EXPECT_EQ(v["task_summary"], "(none)");
}

TEST(AgentContext, LineNumbersForTheDebugger) {
  EXPECT_EQ(with_line_numbers("a\nb\n"), "   1 | a\n   2 | b\n");
  EXPECT_EQ(with_line_numbers("a"), "   1 | a\n");
}

}  // namespace
}  // namespace mk::agents
