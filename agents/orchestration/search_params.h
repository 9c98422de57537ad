// What a search may do (strategy and its shape) and how much it may spend (budget). Both are
// stored with the run as JSON so a resumed run continues under the same rules.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace mk::agents {

struct SearchParams {
  std::string strategy = "beam";  // "greedy" (Auto) | "parallel" | "beam" | "ucb"
  size_t beam_size = 2;           // beam members; independent lineages for "parallel"
  size_t branches = 3;            // children per expanded node
  int max_depth = 4;              // nodes at this depth are not expanded
  double keep_factor = 0.5;       // beam: share of the previous beam carried into the next
  double ucb_exploration = 1.4;   // ucb: the c in mean + c * sqrt(ln N / n)
  size_t concurrency = 2;         // evaluations in flight at once
  // Stop once the best kernel reaches this share of the task's roofline (its minimum work at
  // the target's peak; 0 = never). A node at 90% has little left for any rewrite to win.
  double roofline_stop = 0.9;
  bool diagnosis = true;  // order each expansion by the parent's diagnosis (off: plain order)
  // The autotune phase: each round the best kernel not yet tuned has up to this many
  // configurations of its derived space tried by the worker's autotune op (0 = no phase).
  // kAutotuneAutomatic is resolved once, when the run is first driven (service/searches):
  // kAutotuneOnDevices on a TPU or GPU host, where each configuration's time is measured; none
  // on a CPU host, where only the model ranks them and the phase costs more than it finds.
  static constexpr int kAutotuneAutomatic = -1;
  static constexpr int kAutotuneOnDevices = 8;
  int autotune_configs = 0;

  nlohmann::json to_json() const;
  static SearchParams from_json(const nlohmann::json& j);
};

struct Budget {
  int iterations = 0;         // rounds of expansion (0 = no limit)
  int evaluations = 0;        // candidate evaluations (0 = no limit)
  double seconds = 0;         // wall time over all sessions of the run (0 = no limit)
  int64_t tokens = 0;         // LLM tokens (0 = no limit)
  double usd = 0;             // LLM cost (0 = no limit)
  int patience = 0;           // stop after this many rounds without a gain (0 = never)
  double target_speedup = 0;  // stop once the best reaches it (0 = never)

  nlohmann::json to_json() const;
  static Budget from_json(const nlohmann::json& j);
  // "iterations=8,seconds=600,usd=2,patience=3,target=1.5"; throws std::invalid_argument.
  static Budget parse(const std::string& spec, Budget defaults);
};

}  // namespace mk::agents
