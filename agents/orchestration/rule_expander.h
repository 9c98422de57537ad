// The expander that needs no LLM: one-parameter autotuner moves (the derived search space) and
// the rule-based rewrites, interleaved by strategy so a few children cover different ideas.
#pragma once

#include "agents/orchestration/expander.h"

namespace mk::agents {

// The direction of a one-parameter move from its description "NAME a -> b": +1 larger, -1
// smaller, 0 when it is not such a move.
int block_move_direction(const std::string& description);

class RuleExpander : public Expander {
 public:
  std::vector<Proposal> expand(const ExpansionRequest& request) override;
  std::string name() const override { return "rules"; }
};

}  // namespace mk::agents
