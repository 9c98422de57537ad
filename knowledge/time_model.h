// An analytical time model for one pallas_call on a TPU generation, from the exact facts that
// lowering reports (FLOPs, HBM bytes from walking the index maps over the grid, grid steps).
// Its output is a prediction, always labelled as such, never shown as a measurement.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"

namespace mk::knowledge {

struct KernelCostFacts {
  double flops = 0;
  double hbm_bytes = 0;  // read + written, from the index-map walk
  double grid_steps = 1;
  std::string compute_dtype;  // "bfloat16", "float32", "int8", ... (the widest input dtype)
};

struct TimePrediction {
  double seconds = 0;
  double compute_seconds = 0;
  double memory_seconds = 0;
  double overhead_seconds = 0;
  double arithmetic_intensity = 0;  // FLOPs per HBM byte
  double ridge_intensity = 0;       // where the generation turns compute-bound
  std::string bound;                // "memory", "compute" or "grid overhead"
  std::string label;                // "predicted (model, v5e)"
  std::vector<std::string> assumptions;
};

// Per grid step fixed cost of the Pallas TPU pipeline, an assumption documented in
// docs/time-model.md; checked against measurements when a TPU host runs the kernel.
inline constexpr double kGridStepOverheadSeconds = 0.35e-6;

std::optional<TimePrediction> predict_time(const KernelCostFacts& facts,
                                           const TpuGeneration& target);

// Relative error of the model against a measurement: (predicted - measured) / measured.
double model_error(double predicted_seconds, double measured_seconds);

}  // namespace mk::knowledge
