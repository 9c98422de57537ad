// The autotune phase of a search round: the best kernel's derived space (block sizes, stage
// counts) tried in one worker call, each configuration cached per kernel, shapes and device; the
// winner, when it is not the kernel's own configuration, becomes a child the search evaluates
// like any other (so the extra shapes and the score's rules hold for it too).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/orchestration/evaluator.h"
#include "agents/subagents/subagents.h"

namespace mk::agents {

struct TunedChild {
  std::string code;         // the kernel with the best configuration written in
  std::string description;  // "autotune phase: BLOCK_ROWS=16 (best of 8 configurations, ...)"
};

struct AutotunePhase {
  bool ran = false;  // false: the kernel has nothing to tune (no block size to vary)
  TuningOutcome outcome;
  // What the tuned node keeps (its facts' "tuning"): the counts, the best configuration and its
  // score, or the error; a node that has it is not tuned again, in this session or a resumed one.
  nlohmann::json record;
  std::optional<TunedChild> child;  // the best configuration, when it is not the kernel's own
  nlohmann::json own_config;        // the kernel's own configuration
  std::optional<ConfigScore> own;   // its score, when it was correct and scored
};

// Tunes `code` over at most `max_configs` configurations of its derived space, or of `widened`
// (the Autotuner's answer: the derived space with the LLM's values) when it has parameters.
// `block_direction` (+1 larger, -1 smaller; preferred_block_direction of a diagnosis): the
// derived space keeps block sizes on that side when it is trimmed to `max_configs`.
AutotunePhase autotune_phase(Evaluator& evaluator, const std::string& code, int max_configs,
                             const std::function<bool()>& cancelled,
                             const std::optional<TuningSpace>& widened = std::nullopt,
                             int block_direction = 0);

// "BLOCK_ROWS=16, BLOCK_COLS=256"
std::string config_text(const nlohmann::json& config);

// Whether a node's facts say it was tuned already.
bool was_tuned(const nlohmann::json& facts);

}  // namespace mk::agents
