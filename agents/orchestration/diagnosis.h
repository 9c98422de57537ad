// What limits one evaluated node, from its metrics (the worker's lowering facts, the time
// model's predictions, a device profile where there is one) and the task's minimum work; and
// which rewrite families answer it. Plain data: the search records it, the rule expander orders
// its proposals by it, the CLI and the report print it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"

namespace mk::agents {

// An input whose blocks are fetched more often than there are distinct blocks: its index map
// ignores a grid axis that varies between visits, so the same block comes back from HBM.
struct Refetch {
  std::string operand;          // the operand's origin ("x_ref") or "input <index>"
  std::string kernel;           // the pallas_call's kernel
  double ratio = 0;             // fetches / distinct_blocks
  std::vector<int> along_axes;  // grid axes (size > 1) its index map does not read
  double extra_bytes = 0;       // (fetches - distinct_blocks) * block_bytes
};

struct Diagnosis {
  // "compute", "compute (VPU)", "HBM", "grid overhead", "VMEM", or "unknown" (facts missing).
  std::string bound = "unknown";
  std::string summary;  // one line: "HBM-bound: x_ref re-fetched 8x along grid axis 1"
  std::optional<double> compute_s, memory_s, overhead_s;
  std::optional<double> hbm_bytes, min_bytes, flops;
  std::optional<double> vmem_bytes, vmem_limit_bytes;
  std::vector<Refetch> refetches;
  std::optional<double> roofline_s;         // the task's minimum work at the target's roofline
  std::optional<double> roofline_fraction;  // roofline_s / the node's score
  std::optional<double> pallas_share;       // device trace: share of op time in Pallas kernels

  nlohmann::json to_json() const;
  static Diagnosis from_json(const nlohmann::json& j);
};

// `metrics`: a node's metrics (pallas_calls, predictions, task_work or xla_cost, profile);
// `score_s`: the node's score. Facts that are missing leave their fields empty and the bound
// "unknown": the diagnosis never guesses.
Diagnosis diagnose(const nlohmann::json& metrics, std::optional<double> score_s,
                   const knowledge::TpuGeneration& target);

// The rewrite families that answer the diagnosis, most promising first (the rule expander's
// strategies: "block_sizes", "autotune", "accumulator_f32", "buffering", "dimension_semantics").
// Empty for "unknown": no preference.
std::vector<std::string> answering_strategies(const Diagnosis& d);

// +1 when larger blocks answer it (re-fetches, grid overhead), -1 when smaller ones do (VMEM),
// 0 when the direction does not matter.
int preferred_block_direction(const Diagnosis& d);

// The short text a proposal records as the diagnosis it answers: "<summary> -> <description>".
std::string answer_text(const Diagnosis& d, const std::string& proposal_description);

}  // namespace mk::agents
