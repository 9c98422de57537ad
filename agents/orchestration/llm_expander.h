// The expander that uses an LLM: the Planner proposes strategies for the parent, the Implementer
// writes one child per strategy, and a child that does not lower goes to the Debugger (bounded
// attempts, with the history of earlier attempts) before it becomes a node. Falls back to the
// rule-based expander when the LLM has nothing usable, so a search never stalls on bad answers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/llm/llm_client.h"
#include "agents/orchestration/expander.h"
#include "agents/orchestration/rule_expander.h"

namespace mk::agents {

struct LlmExpanderOptions {
  std::string task_summary;
  std::string target_facts;
  // Knowledge passages for a kernel (and an error text, for the debugger), best first.
  std::function<std::vector<std::string>(const std::string& source, const std::string& error)>
      retrieve;
  // The lowering error of a candidate ("" when it lowers); null: no debugging before evaluation.
  std::function<std::string(const std::string& source)> lowering_error;
  int max_debug_attempts = 2;
  int token_budget = 12000;
  bool fall_back_to_rules = true;
};

class LlmExpander : public Expander {
 public:
  LlmExpander(llm::Client& client, LlmExpanderOptions options)
      : client_(client), options_(std::move(options)) {}
  std::vector<Proposal> expand(const ExpansionRequest& request) override;
  std::string name() const override { return "llm"; }

 private:
  llm::Client& client_;
  LlmExpanderOptions options_;
  RuleExpander rules_;
};

}  // namespace mk::agents
