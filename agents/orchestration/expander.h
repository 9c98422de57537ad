// Where new candidates come from. A search asks an Expander for up to N children of a node; the
// rule-based expander (no LLM: autotuner moves + rewrites) is the embedded default, the LLM
// expander runs planner -> implementer (-> debugger) through a provider.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agents/llm/llm_client.h"
#include "agents/orchestration/diagnosis.h"
#include "agents/orchestration/node_metrics.h"
#include "agents/subagents/subagents.h"

namespace mk::agents {

struct Proposal {
  std::string code;         // the whole candidate file
  std::string strategy;     // "block_sizes", "autotune", "llm", ...
  std::string description;  // one line
  std::string plan;         // markdown (LLM) or the rule's explanation
  llm::Usage usage;         // LLM usage spent producing it
  std::string answers;      // the parent's diagnosis it answers ("" when none was used)
};

struct ExpansionRequest {
  std::string parent_code;
  std::string kernel_name;             // "" = the first kernel
  std::set<std::string> known_hashes;  // normalised-source hashes already in the run
  size_t max_children = 3;
  std::function<bool()> cancelled;
  std::string history;               // earlier attempts with errors/metrics (for LLMs)
  bool parent_is_reference = false;  // the parent is the task's plain JAX reference (no kernel)
  llm::Usage* unattributed_usage = nullptr;  // LLM usage no proposal carries (added to the run)
  // What limits the parent (absent when the search runs without diagnoses, or for a root that
  // has none): expanders order their ideas by it and record which one each proposal answers.
  std::optional<Diagnosis> diagnosis;
  // The parent's metrics: what the LLM's profile analyst reads, and its answer from an earlier
  // expansion (`analysis`), reused instead of asking again.
  NodeMetrics parent_metrics;
  // Records a new analysis of the parent on its node (metrics "analysis"); null: not recorded.
  std::function<void(const nlohmann::json& analysis)> record_analysis;
};

class Expander {
 public:
  virtual ~Expander() = default;
  // Up to max_children proposals whose normalised hash is not in known_hashes, distinct from
  // each other. An empty result means the node is exhausted for this expander.
  virtual std::vector<Proposal> expand(const ExpansionRequest& request) = 0;
  virtual std::string name() const = 0;
  // The autotune phase's space for `code` (at most max_configs configurations): nullopt keeps
  // the derived one; the LLM expander has the Autotuner widen it (values added to the derived
  // parameters, never new parameters; its usage is on the answer). `metrics`: the node's numbers.
  virtual std::optional<TuningSpace> tuning_space(const std::string& code,
                                                  const std::string& kernel_name,
                                                  const std::string& metrics, size_t max_configs,
                                                  const std::function<bool()>& cancelled) {
    (void)code;
    (void)kernel_name;
    (void)metrics;
    (void)max_configs;
    (void)cancelled;
    return std::nullopt;
  }
};

// sha256 of the normalised Python source (comments, blank lines and trailing spaces dropped).
std::string candidate_hash(const std::string& source);

}  // namespace mk::agents
