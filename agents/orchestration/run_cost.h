// What a search spent: each node's cost (NodeRecord::cost) and the run's totals (RunRecord::cost),
// the figures the budgets are checked against and the report's cost table shows. The store keeps
// them as the JSON objects it always had (nodes.cost_json, runs.cost_json, same keys), converted
// once at the storage boundary (run_store.cpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace mk::agents {

struct NodeCost {
  int64_t tokens_in = 0;    // LLM input tokens spent proposing the node (0 for rule rewrites)
  int64_t tokens_out = 0;   // LLM output tokens
  double usd = 0;           // what those tokens cost
  double host_seconds = 0;  // wall time of its evaluation on the host (0 while pending)
  bool cache_hit = false;   // the verdict came from the evaluation cache, not a fresh run

  // Every field, always ({"tokens_in", "tokens_out", "usd", "host_seconds", "cache_hit"}).
  nlohmann::json to_json() const;
  // Missing or mistyped fields stay 0 / false; anything but an object is all zeros.
  static NodeCost from_json(const nlohmann::json& j);
  bool operator==(const NodeCost&) const = default;
};

struct RunCost {
  int64_t tokens_in = 0;       // LLM input tokens of the whole run, calls no node kept included
  int64_t tokens_out = 0;      // LLM output tokens, the same way
  double usd = 0;              // what the run's LLM calls cost
  double host_seconds = 0;     // evaluation wall time on hosts, summed over the evaluated nodes
  int evaluations = 0;         // finished evaluations (cache hits included)
  int cache_hits = 0;          // of those, answered from the evaluation cache
  int64_t llm_calls = 0;       // LLM calls; counted by step-by-step sessions only (Auto leaves 0)
  int tuning_evaluations = 0;  // configurations the autotune phase had the worker run
  int tuning_cache_hits = 0;   // configurations it found in the tuning cache instead

  int64_t tokens() const { return tokens_in + tokens_out; }
  // Nothing recorded yet (a run created but not driven, a session that spent nothing).
  bool empty() const { return *this == RunCost{}; }
  // Counts one finished evaluation and what its node cost.
  void add_evaluation(const NodeCost& node);

  // The six totals always; "llm_calls" and the two tuning counts only when some were counted.
  nlohmann::json to_json() const;
  // Missing or mistyped fields stay 0; anything but an object is all zeros.
  static RunCost from_json(const nlohmann::json& j);
  bool operator==(const RunCost&) const = default;
};

}  // namespace mk::agents
