#include "service/kernel_diagnosis.h"

#include "agents/orchestration/candidate_evaluator.h"
#include "agents/orchestration/diagnosis_text.h"
#include "tpu/host/json_fields.h"
#include "tpu/jobs/predictions.h"

namespace mk::service {

using nlohmann::json;
using tpu::field;

namespace {

// The model's total over the calls; nullopt when any call has no prediction.
std::optional<double> predicted_total(const json& predictions) {
  if (!predictions.is_array() || predictions.empty()) return std::nullopt;
  double total = 0;
  for (const json& p : predictions) {
    const json& s = field(p, "predicted_s");
    if (!s.is_number()) return std::nullopt;
    total += s.get<double>();
  }
  return total;
}

KernelDiagnosis with_text(agents::Diagnosis d, std::optional<double> score_s,
                          std::string score_label) {
  KernelDiagnosis out;
  out.label = agents::diagnosis_label(d);
  out.lines = agents::diagnosis_lines(d, score_label);
  out.diagnosis = std::move(d);
  out.score_s = score_s;
  out.score_label = std::move(score_label);
  return out;
}

}  // namespace

std::optional<KernelDiagnosis> diagnose_profile(const json& lower_body, const json& profile_body,
                                                const knowledge::TpuGeneration& target) {
  const json& calls = field(lower_body, "pallas_calls");
  if (!calls.is_array() || calls.empty()) return std::nullopt;
  const json predictions = tpu::predict_pallas_calls(calls, target, field(lower_body, "cost"),
                                                     field(lower_body, "work"));
  json metrics = {{"pallas_calls", calls}, {"predictions", predictions}};
  if (const json& ref = field(field(lower_body, "work"), "reference"); ref.is_object())
    metrics["task_work"] = ref;
  if (profile_body.is_object()) metrics["profile"] = profile_body;

  // The device's time for one run of the whole program, when the profile measured it at the
  // task's own shapes; otherwise the model's prediction (never host or interpret time).
  std::optional<double> score_s;
  std::string time_kind;
  const json& summary = field(profile_body, "summary");
  const json& per_run = field(summary, "op_time_per_run_us");
  const json& instance = field(field(profile_body, "instance"), "kind");
  const bool full_shapes = !instance.is_string() || instance.get<std::string>() == "full";
  if (field(summary, "measured") == "device" && per_run.is_number() && per_run.get<double>() > 0 &&
      full_shapes) {
    score_s = per_run.get<double>() * 1e-6;
    time_kind = "device";
  } else if (auto predicted = predicted_total(predictions)) {
    score_s = predicted;
    time_kind = "predicted";
  }
  return with_text(agents::diagnose(metrics, score_s, target), score_s,
                   time_kind.empty() ? "" : agents::score_label(time_kind, target));
}

std::optional<KernelDiagnosis> node_diagnosis(const agents::NodeRecord& node,
                                              const knowledge::TpuGeneration& target) {
  if (!node.metrics.bottleneck) return std::nullopt;
  return with_text(*node.metrics.bottleneck, node.score_s,
                   node.time_kind.empty() ? "" : agents::score_label(node.time_kind, target));
}

json to_json(const KernelDiagnosis& d) {
  json j = d.diagnosis.to_json();
  j["label"] = d.label;
  j["lines"] = d.lines;
  j["score_s"] = d.score_s ? json(*d.score_s) : json();
  j["score_label"] = d.score_label;
  return j;
}

}  // namespace mk::service
