// The first step of a search that starts from a plain JAX function: the root is the reference
// (XLA), and its children are kernels written from it: the generator's templates first, then,
// when the run's expander is the LLM's, kernels the LLM writes from the reference (with the
// templates' kernels as its starting point) in the room left. The rule expander is never asked
// about the root: it has no kernel to change. Every other node is expanded by the run's own
// expander.
#pragma once

#include <vector>

#include "agents/orchestration/expander.h"

namespace mk::agents {

class LlmExpander;

class ReferenceStartExpander : public Expander {
 public:
  ReferenceStartExpander(std::vector<Proposal> from_reference, Expander& rest);

  std::vector<Proposal> expand(const ExpansionRequest& request) override;
  std::string name() const override { return rest_.name(); }

 private:
  std::vector<Proposal> from_reference_;
  Expander& rest_;
  LlmExpander* llm_ = nullptr;  // rest_ when it is the LLM's expander
};

}  // namespace mk::agents
