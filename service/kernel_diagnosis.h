// What limits a kernel, as both front ends show it: the diagnosis (agents/orchestration/diagnosis)
// of a Profile run or of a search node, with its short label, its full summary lines and the
// score its roofline fraction compares against. Plain data; nothing here knows LSP.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/diagnosis.h"
#include "agents/orchestration/run_store.h"
#include "knowledge/tpu_generations.h"

namespace mk::service {

struct KernelDiagnosis {
  agents::Diagnosis diagnosis;
  std::optional<double> score_s;   // the kernel's time the roofline fraction compares
  std::string score_label;         // "measured (device)" | "predicted (model, v5e)"
  std::string label;               // "HBM-bound · 41% of roofline" (agents::diagnosis_label)
  std::vector<std::string> lines;  // the full summary (agents::diagnosis_lines)
};

// The diagnosis of a profiled kernel: `lower_body` is the worker's lower reply at the task's full
// shapes (pallas_calls with their HBM traffic, cost, the task's minimum work), `profile_body` the
// profile reply. The score is the profile's device op time per run when it measured the device
// at full shapes, else the model's predicted total for `target` (labelled as such: interpret or
// host time is never compared with a roofline). nullopt when the lowering listed no pallas_call.
std::optional<KernelDiagnosis> diagnose_profile(const nlohmann::json& lower_body,
                                                const nlohmann::json& profile_body,
                                                const knowledge::TpuGeneration& target);

// The diagnosis a search recorded for a node (its metrics' "bottleneck"); nullopt for a node
// without one (not correct, or from a run before diagnoses).
std::optional<KernelDiagnosis> node_diagnosis(const agents::NodeRecord& node,
                                              const knowledge::TpuGeneration& target);

// The plain JSON `maxkernel profile --format json` writes: the diagnosis's own fields plus
// "label", "lines", "score_s" and "score_label".
nlohmann::json to_json(const KernelDiagnosis& d);

}  // namespace mk::service
