#include "agents/orchestration/profile_analysis.h"

#include <cstdint>
#include <cstdio>

#include "agents/orchestration/number_text.h"
#include "tpu/host/json_fields.h"

namespace mk::agents {

using nlohmann::json;
using tpu::number_at;
using tpu::text_at;

namespace {

// Counts (bytes, FLOPs, steps) whole; anything else to four significant digits.
std::string number_text(double v) {
  char buf[32];
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v > -1e15 && v < 1e15)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string seconds_text(double s) {
  return number_text(s * 1e6) + " us";
}

std::string byte_count_text(double b) {
  return number_text(b) + " bytes";
}

// "(8, 256)" from a JSON array of numbers (None for a squeezed dim).
std::string shape_text(const json& dims) {
  if (!dims.is_array()) return "?";
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += i ? ", " : "";
    out += dims[i].is_number() ? number_text(dims[i].get<double>()) : "None";
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::string list_text(const json& items) {
  std::string out;
  if (!items.is_array()) return out;
  for (const json& item : items)
    out += (out.empty() ? "" : ", ") + (item.is_string() ? item.get<std::string>() : item.dump());
  return out;
}

std::string time_kind_text(const std::string& kind) {
  if (kind == "device") return "measured on the device";
  if (kind == "predicted") return "predicted by the TPU time model (not a measurement)";
  if (kind == "compiled")
    return "predicted from the TPU compiler's static cycles (libtpu, no TPU; not a measurement)";
  if (kind == "interpret")
    return "the Pallas interpreter's wall time on a CPU host (not a kernel time; the search "
           "ranks by the TPU time model's prediction)";
  return kind.empty() ? "unknown" : kind;
}

std::string operands_text(const json& call) {
  std::string out;
  for (const json& op : call.value("operands", json::array())) {
    const std::string origin = text_at(op, "origin");
    out += "\n  - " + text_at(op, "role") + " " + (origin.empty() ? "?" : origin) + ": " +
           text_at(op, "dtype") + shape_text(op.value("array_shape", json())) + ", block " +
           shape_text(op.value("block_shape", json()));
    if (const auto buffers = number_at(op, "buffer_count"))
      out += ", " + number_text(*buffers) + " buffers";
  }
  return out;
}

std::string traffic_text(const json& traffic) {
  if (!traffic.is_object() || !traffic.value("available", false))
    return "\n  HBM traffic: not known";
  std::string out = "\n  HBM traffic: " + byte_count_text(traffic.value("hbm_bytes_read", 0.0)) +
                    " read, " + byte_count_text(traffic.value("hbm_bytes_written", 0.0)) +
                    " written";
  if (const auto steps = number_at(traffic, "grid_steps"))
    out += " over " + number_text(*steps) + " grid steps";
  for (const json& op : traffic.value("operands", json::array())) {
    const auto fetches = number_at(op, "fetches");
    const auto distinct = number_at(op, "distinct_blocks");
    if (!fetches || !distinct) continue;
    const std::string origin = text_at(op, "origin");
    out += "\n  - " + (origin.empty() ? "input" : origin) + ": " + number_text(*fetches) +
           " block fetches of " + number_text(*distinct) + " distinct blocks";
    if (op.contains("grid_axes_read"))
      out += ", index map reads grid axes [" + list_text(op["grid_axes_read"]) + "]";
  }
  return out;
}

std::string prediction_text(const json& p) {
  std::string out = "\n  time model: ";
  if (const auto total = number_at(p, "predicted_s")) out += seconds_text(*total) + " =";
  const auto c = number_at(p, "compute_s"), m = number_at(p, "memory_s"),
             o = number_at(p, "overhead_s");
  if (c) out += " compute " + seconds_text(*c);
  if (m) out += ", HBM " + seconds_text(*m);
  if (o) out += ", grid-step overhead " + seconds_text(*o);
  if (const std::string bound = text_at(p, "bound"); !bound.empty())
    out += " (" + bound + "-bound)";
  if (const auto ai = number_at(p, "arithmetic_intensity")) {
    out += "; arithmetic intensity " + number_text(*ai) + " FLOP/byte";
    if (const auto ridge = number_at(p, "ridge_intensity"))
      out += " (ridge " + number_text(*ridge) + ")";
  }
  return out;
}

}  // namespace

json ParentAnalysis::to_json() const {
  json j = {{"prompt_version", prompt_version}};
  if (!analysis) {
    j["error"] = error;
    return j;
  }
  j["bottleneck"] = analysis->bottleneck;
  j["evidence"] = analysis->evidence;
  json strategies = json::array();
  for (const Strategy& s : analysis->next_strategies)
    strategies.push_back(
        {{"name", s.name}, {"why", s.why}, {"expected_effect", s.expected_effect}});
  j["next_strategies"] = strategies;
  return j;
}

std::optional<ParentAnalysis> ParentAnalysis::from_json(const json& j) {
  if (!j.is_object() || (!j.contains("bottleneck") && !j.contains("error"))) return std::nullopt;
  ParentAnalysis a;
  a.prompt_version = j.value("prompt_version", 0);
  if (!j.contains("bottleneck")) {
    a.error = text_at(j, "error");
    return a;
  }
  Analysis answer;
  answer.bottleneck = text_at(j, "bottleneck");
  answer.evidence = text_at(j, "evidence");
  for (const json& s : j.value("next_strategies", json::array()))
    answer.next_strategies.push_back(
        {text_at(s, "name"), text_at(s, "why"), text_at(s, "expected_effect")});
  a.analysis = std::move(answer);
  return a;
}

std::string measurements_text(const json& metrics) {
  if (!metrics.is_object()) return "";
  std::string out = "scored by: " + time_kind_text(text_at(metrics, "time_kind"));
  const json timing = metrics.value("timing", json::object()).value("candidate", json::object());
  if (const auto device = number_at(timing.value("device", json::object()), "median_s"))
    out += "\nmeasured device time: median " + seconds_text(*device);
  const json calls = metrics.value("pallas_calls", json::array());
  const json predictions = metrics.value("predictions", json::array());
  for (size_t i = 0; calls.is_array() && i < calls.size(); ++i) {
    const json& call = calls[i];
    out += "\npallas_call `" + text_at(call, "kernel") + "`";
    if (const auto line = number_at(call.value("location", json::object()), "line"))
      out += " (line " + number_text(*line) + ")";
    out += ": grid " + shape_text(call.value("grid", json()));
    if (call.contains("dimension_semantics"))
      out += ", dimension_semantics (" + list_text(call["dimension_semantics"]) + ")";
    if (const auto vmem = number_at(call, "vmem_bytes_per_step")) {
      out += "; VMEM " + byte_count_text(*vmem) + " per step";
      if (const auto limit = number_at(call, "vmem_limit_bytes"))
        out += " (limit " + byte_count_text(*limit) + ")";
    }
    out += operands_text(call);
    out += traffic_text(call.value("traffic", json()));
    if (predictions.is_array() && i < predictions.size()) out += prediction_text(predictions[i]);
  }
  const json work = metrics.contains("task_work") ? metrics["task_work"]
                                                  : metrics.value("xla_cost", json::object());
  if (work.is_object() && (work.contains("flops") || work.contains("min_bytes"))) {
    out += "\nthe task's minimum work:";
    if (const auto flops = number_at(work, "flops")) out += " " + number_text(*flops) + " FLOPs";
    if (const auto mxu = number_at(work, "matmul_flops"))
      out += " (" + number_text(*mxu) + " of them matmul)";
    if (const auto bytes = number_at(work, "min_bytes"))
      out += ", " + byte_count_text(*bytes) + " HBM";
  }
  const json outside = metrics.value("outside_kernels", json::object());
  if (const auto s = number_at(outside, "predicted_s"))
    out += "\nXLA work outside the kernels: " + seconds_text(*s) + " predicted";
  return out;
}

std::string device_profile_text(const json& metrics) {
  if (!metrics.is_object()) return "";
  const json summary = metrics.value("profile", json::object()).value("summary", json::object());
  if (!summary.is_object() || summary.empty()) return "";
  std::string out = "measured: " + text_at(summary, "measured");
  if (const auto per_run = number_at(summary, "op_time_per_run_us"))
    out += "; op time per run " + number_text(*per_run) + " us";
  if (const auto share = number_at(summary, "pallas_share"))
    out += "; share in Pallas kernels " + percent_text(*share, 1);
  for (const json& k : summary.value("kernels", json::array())) {
    out += "\n- kernel " + text_at(k, "kernel");
    if (const auto us = number_at(k, "per_run_us")) out += ": " + number_text(*us) + " us per run";
    if (const auto share = number_at(k, "share")) out += " (" + percent_text(*share, 1) + ")";
  }
  size_t shown = 0;
  for (const json& op : summary.value("top_ops", json::array())) {
    if (shown++ == 5) break;
    out += "\n- op " + text_at(op, "op");
    if (const auto us = number_at(op, "time_us")) out += ": " + number_text(*us) + " us";
  }
  if (const std::string note = text_at(summary, "note"); !note.empty()) out += "\n" + note;
  return out;
}

std::string diagnosis_text(const Diagnosis& d) {
  std::string out = d.summary.empty() ? d.bound : d.summary;
  out += "\nbound: " + d.bound;
  if (d.compute_s && d.memory_s && d.overhead_s)
    out += " (time model: compute " + seconds_text(*d.compute_s) + ", HBM " +
           seconds_text(*d.memory_s) + ", grid-step overhead " + seconds_text(*d.overhead_s) + ")";
  if (d.hbm_bytes) {
    out += "\nHBM traffic: " + byte_count_text(*d.hbm_bytes);
    if (d.min_bytes) out += " (the task's minimum: " + byte_count_text(*d.min_bytes) + ")";
  }
  if (d.vmem_bytes)
    out += "\nVMEM per step: " + byte_count_text(*d.vmem_bytes) +
           (d.vmem_limit_bytes ? " of " + byte_count_text(*d.vmem_limit_bytes) : "");
  for (const Refetch& r : d.refetches) {
    out += "\nre-fetched: " + r.operand + " in `" + r.kernel + "` " + number_text(r.ratio) + "x";
    if (!r.along_axes.empty()) {
      std::string axes;
      for (int a : r.along_axes) axes += (axes.empty() ? "" : ", ") + std::to_string(a);
      out += " along grid axis " + axes;
    }
    out += " (" + byte_count_text(r.extra_bytes) + " extra)";
  }
  if (d.roofline_s) {
    out += "\nroofline: the task's minimum work takes " + seconds_text(*d.roofline_s);
    if (d.roofline_fraction)
      out += "; this kernel is at " + percent_text(*d.roofline_fraction, 1) + " of it";
  }
  if (d.pallas_share)
    out += "\nshare of device op time in Pallas kernels: " + percent_text(*d.pallas_share, 1);
  return out;
}

std::string planner_diagnosis_text(const Diagnosis& d, const ParentAnalysis& analysis) {
  std::string out =
      "Rule-based (from the lowering facts and the time model):\n" + diagnosis_text(d);
  if (!analysis.analysis) {
    out += "\n\nProfile analyst: no answer (" +
           (analysis.error.empty() ? std::string("not asked") : analysis.error) +
           "); go by the rule-based diagnosis.";
    return out;
  }
  const Analysis& a = *analysis.analysis;
  out += "\n\nProfile analyst: bottleneck " + a.bottleneck + ".";
  if (!a.evidence.empty()) out += " " + a.evidence;
  if (!a.next_strategies.empty()) out += "\nIts suggestions, best first:";
  for (const Strategy& s : a.next_strategies) {
    out += "\n- " + s.name + ": " + s.why;
    if (!s.expected_effect.empty()) out += " (expected: " + s.expected_effect + ")";
  }
  return out;
}

std::string llm_answer_text(const Diagnosis& d, const ParentAnalysis& analysis,
                            const std::string& proposal_description) {
  Diagnosis named = d;
  if (named.summary.empty()) named.summary = named.bound;
  if (analysis.analysis) named.summary += "; profile analyst: " + analysis.analysis->bottleneck;
  return answer_text(named, proposal_description);
}

}  // namespace mk::agents
