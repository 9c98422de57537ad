// The step-by-step session's LLM proposer: the Planner sub-agent writes the plan (its strategies
// as the same ticked markdown checklist the rule-based proposer writes), the Implementer applies
// the lines the user left ticked and returns the whole new file; the Debugger fixes what the test
// phase found wrong. Malformed answers (twice) and LLM failures throw with a message for the
// user; the session shows it and asks again.
#pragma once

#include <memory>
#include <string>

#include "agents/llm/llm_client.h"
#include "agents/orchestration/hitl_session.h"

namespace mk::agents {

struct LlmProposerOptions {
  std::string task_summary;   // what the kernel must keep doing
  std::string target_facts;   // describe_target()
  int token_budget = 12000;   // per prompt
  llm::CancelFlag cancelled;  // true: stop the call under way (server exit)
};

class LlmProposer : public Proposer {
 public:
  LlmProposer(std::unique_ptr<llm::Client> client, LlmProposerOptions options);
  ~LlmProposer() override;

  std::string plan(const PlanRequest& request) override;
  // One Implementer call for all ticked lines, in the order the user left them.
  Implementation implement(const ImplementRequest& request) override;
  // One Debugger call (the search's sub-agent and prompt): the failing file, the test's report,
  // the code the session started from. An unusable answer (twice) throws.
  std::string debug(const DebugRequest& request) override;
  bool can_debug() const override { return true; }
  llm::Usage usage() const override { return usage_; }
  int llm_calls() const override { return calls_; }
  std::string describe() const override;

 private:
  std::unique_ptr<llm::Client> client_;
  LlmProposerOptions options_;
  llm::Usage usage_;
  int calls_ = 0;
};

}  // namespace mk::agents
