// Predicted time per pallas_call from the worker's facts (cost + HBM traffic), and the check of
// those predictions against device measurements.
#pragma once

#include <nlohmann/json.hpp>

#include "knowledge/tpu_generations.h"

namespace mk::tpu {

// For each entry of `pallas_calls` (the worker's lower/evaluate facts): {"kernel", "label",
// "predicted_s", "compute_s", "memory_s", "overhead_s", "bound", "arithmetic_intensity",
// "ridge_intensity", "assumptions"}, or {"kernel", "unavailable": reason}.
// `program_cost` is the lower reply's top-level "cost": when a program has exactly one
// pallas_call without its own FLOP count (no cost_estimate), the reference's XLA FLOPs stand in
// for it (the kernel must compute the same thing), and the entry says so in "assumptions".
// `work` is the reply's "work" (the worker's count of each kernel's body FLOPs over its grid),
// preferred to the reference's FLOPs for a kernel without a cost_estimate.
nlohmann::json predict_pallas_calls(const nlohmann::json& pallas_calls,
                                    const knowledge::TpuGeneration& target,
                                    const nlohmann::json& program_cost = nlohmann::json(),
                                    const nlohmann::json& work = nlohmann::json());

}  // namespace mk::tpu
