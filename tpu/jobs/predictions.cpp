#include "tpu/jobs/predictions.h"

#include <optional>

#include "knowledge/time_model.h"

namespace mk::tpu {

using nlohmann::json;

namespace {

int dtype_bits(const std::string& dtype) {
  if (dtype.find("64") != std::string::npos) return 64;
  if (dtype.find("32") != std::string::npos) return 32;
  if (dtype.find("16") != std::string::npos) return 16;
  if (dtype.find("8") != std::string::npos) return 8;
  return 32;
}

}  // namespace

json predict_pallas_calls(const json& pallas_calls, const knowledge::TpuGeneration& target,
                          const json& program_cost, const json& work) {
  json out = json::array();
  if (!pallas_calls.is_array()) return out;
  // The reference's FLOPs (XLA's count, or the task's own get_flops) stand in for a lone kernel
  // without a cost_estimate: the kernel must compute the same thing.
  std::optional<double> reference_flops;
  const std::string source =
      program_cost.is_object() ? program_cost.value("source", std::string()) : "";
  if (pallas_calls.size() == 1 && (source.starts_with("reference_xla") || source == "get_flops") &&
      program_cost.contains("flops") && program_cost["flops"].is_number())
    reference_flops = program_cost["flops"].get<double>();
  // Better still: the FLOPs the worker counted in each kernel's body over its grid (never the
  // candidate's own estimate), when it counted them for every kernel in the same order.
  const json per_kernel = work.is_object() ? work.value("candidate", json::object())
                                                 .value("kernels", json::object())
                                                 .value("per_kernel", json::array())
                                           : json::array();
  const bool counted = per_kernel.is_array() && per_kernel.size() == pallas_calls.size();
  for (size_t i = 0; i < pallas_calls.size(); ++i) {
    const json& call = pallas_calls[i];
    json entry = {{"kernel", call.value("kernel", std::string("?"))}};
    json cost = call.value("cost", json::object());
    if (!cost.is_object()) cost = json::object();
    const json& traffic = call.value("traffic", json::object());
    bool flops_from_reference = false, flops_counted = false;
    if (counted && (!cost.contains("flops") || !cost["flops"].is_number()) &&
        per_kernel[i].value("kernel", std::string()) == entry["kernel"] &&
        per_kernel[i].contains("flops") && per_kernel[i]["flops"].is_number() &&
        per_kernel[i]["flops"].get<double>() > 0) {
      cost["flops"] = per_kernel[i]["flops"];
      flops_counted = true;
    }
    if ((!cost.contains("flops") || !cost["flops"].is_number()) && reference_flops) {
      cost["flops"] = *reference_flops;
      flops_from_reference = true;
    }
    if (!cost.contains("flops") || !cost["flops"].is_number() ||
        !traffic.value("available", false)) {
      entry["unavailable"] = "lowering gave no FLOP count or HBM traffic for this kernel";
      out.push_back(entry);
      continue;
    }
    knowledge::KernelCostFacts facts;
    facts.flops = cost["flops"].get<double>();
    facts.hbm_bytes =
        traffic.value("hbm_bytes_read", 0.0) + traffic.value("hbm_bytes_written", 0.0);
    facts.grid_steps = traffic.value("grid_steps", 1.0);
    // The widest input dtype decides which peak applies.
    int widest = 0;
    for (const json& op : call.value("operands", json::array())) {
      if (op.value("role", std::string()) != "input") continue;
      const std::string dtype = op.value("dtype", std::string());
      if (dtype_bits(dtype) > widest) {
        widest = dtype_bits(dtype);
        facts.compute_dtype = dtype;
      }
    }
    auto p = knowledge::predict_time(facts, target);
    if (!p) {
      entry["unavailable"] = "the table lacks the peak FLOP/s or HBM bandwidth of " + target.name;
      out.push_back(entry);
      continue;
    }
    entry.update({{"label", p->label},
                  {"predicted_s", p->seconds},
                  {"compute_s", p->compute_seconds},
                  {"memory_s", p->memory_seconds},
                  {"overhead_s", p->overhead_seconds},
                  {"bound", p->bound},
                  {"arithmetic_intensity", p->arithmetic_intensity},
                  {"ridge_intensity", p->ridge_intensity},
                  {"assumptions", p->assumptions}});
    if (flops_from_reference)
      entry["assumptions"].push_back(
          "FLOPs from the reference's XLA cost analysis (the kernel has no cost_estimate)");
    if (flops_counted)
      entry["assumptions"].push_back(
          "FLOPs counted in the kernel's body over its grid (the kernel has no cost_estimate)");
    out.push_back(entry);
  }
  return out;
}

}  // namespace mk::tpu
