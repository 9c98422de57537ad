#include "agents/orchestration/reference_expander.h"

#include <spdlog/spdlog.h>

#include "agents/orchestration/llm_expander.h"

namespace mk::agents {

ReferenceStartExpander::ReferenceStartExpander(std::vector<Proposal> from_reference, Expander& rest)
    : from_reference_(std::move(from_reference)),
      rest_(rest),
      llm_(dynamic_cast<LlmExpander*>(&rest)) {}

std::vector<Proposal> ReferenceStartExpander::expand(const ExpansionRequest& request) {
  if (!request.parent_is_reference) return rest_.expand(request);
  // The templates' kernels first: cheap, and already known to lower.
  std::vector<Proposal> out;
  for (const Proposal& p : from_reference_) {
    if (out.size() >= request.max_children) break;
    if (request.known_hashes.count(candidate_hash(p.code)) == 0) out.push_back(p);
  }
  if (!llm_ || out.size() >= request.max_children) return out;

  // The LLM writes from the reference in the room left, never repeating a template's kernel.
  ExpansionRequest asked = request;
  asked.max_children = request.max_children - out.size();
  for (const Proposal& p : out) asked.known_hashes.insert(candidate_hash(p.code));
  try {
    for (Proposal& p : llm_->write_from_reference(asked, from_reference_))
      out.push_back(std::move(p));
  } catch (const llm::LlmError& e) {
    // Cancellation stops the expansion; any other LLM failure still lets the templates' kernels
    // be evaluated (the next LLM call meets the same error and stops the run).
    if (out.empty() || e.kind() == llm::ErrorKind::Cancelled) throw;
    spdlog::warn("the LLM wrote nothing from the reference: {}", e.what());
  }
  return out;
}

}  // namespace mk::agents
