#include "knowledge/time_model.h"

#include <algorithm>

namespace mk::knowledge {

namespace {

// Which published peak applies: int8 kernels use the int8 peak, 8-bit floats the fp8 peak where
// published; everything else runs on the MXU in bf16 passes (f32 matmuls at default precision too).
std::optional<double> peak_for(const std::string& dtype, const TpuGeneration& g,
                               std::string& note) {
  auto find = [&](const char* key) -> std::optional<double> {
    auto it = g.peak_flops_per_s.find(key);
    if (it == g.peak_flops_per_s.end()) return std::nullopt;
    return it->second;
  };
  if (dtype == "int8" || dtype == "uint8") {
    if (auto p = find("int8")) return p;
  }
  if (dtype.rfind("float8", 0) == 0) {
    if (auto p = find("fp8")) return p;
  }
  if (dtype == "float32") note = "f32 compute at the bf16 MXU peak (default matmul precision)";
  return find("bf16");
}

}  // namespace

std::optional<TimePrediction> predict_time(const KernelCostFacts& f, const TpuGeneration& g) {
  if (!g.hbm_bandwidth_bytes_per_s || *g.hbm_bandwidth_bytes_per_s <= 0) return std::nullopt;
  std::string note;
  const auto peak = peak_for(f.compute_dtype, g, note);
  if (!peak || *peak <= 0) return std::nullopt;
  TimePrediction p;
  p.compute_seconds = f.flops / *peak;
  p.memory_seconds = f.hbm_bytes / *g.hbm_bandwidth_bytes_per_s;
  p.overhead_seconds = std::max(1.0, f.grid_steps) * kGridStepOverheadSeconds;
  // The pipeline overlaps DMA with compute and with the step's fixed cost, so a step costs the
  // largest of the three (adding the overhead on top predicted 112.9 ms for 91.8 ms measured on
  // the Pallas guide's v5e 8192^3 / 128-block row; docs/time-model.md).
  p.seconds = std::max({p.compute_seconds, p.memory_seconds, p.overhead_seconds});
  p.arithmetic_intensity = f.hbm_bytes > 0 ? f.flops / f.hbm_bytes : 0;
  p.ridge_intensity = *peak / *g.hbm_bandwidth_bytes_per_s;
  if (p.overhead_seconds > std::max(p.compute_seconds, p.memory_seconds)) {
    p.bound = "grid overhead";
  } else {
    p.bound = p.compute_seconds >= p.memory_seconds ? "compute" : "memory";
  }
  p.label = "predicted (model, " + g.name + ")";
  p.assumptions = {
      "HBM traffic from walking the index maps (unchanged block indices are not re-fetched)",
      "DMA, compute and a " + std::to_string(kGridStepOverheadSeconds * 1e6).substr(0, 4) +
          " us fixed cost per grid step overlap: a step costs the largest",
      "one TensorCore walks the whole grid"};
  if (!note.empty()) p.assumptions.push_back(note);
  return p;
}

double model_error(double predicted_seconds, double measured_seconds) {
  return measured_seconds > 0 ? (predicted_seconds - measured_seconds) / measured_seconds : 0;
}

}  // namespace mk::knowledge
