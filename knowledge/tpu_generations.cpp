#include "knowledge/tpu_generations.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace mk::knowledge {

extern const char* const kTpuGenerationsJson;  // generated from data/tpu_generations.json

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

template <typename T>
std::optional<T> optional_number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<T>();
}

std::vector<TpuGeneration> load() {
  const auto doc = nlohmann::json::parse(kTpuGenerationsJson);
  std::vector<TpuGeneration> out;
  for (const auto& g : doc.at("generations")) {
    TpuGeneration t;
    t.name = g.at("name").get<std::string>();
    for (const auto& a : g.value("aliases", nlohmann::json::array()))
      t.aliases.push_back(a.get<std::string>());
    t.vmem_bytes = optional_number<int64_t>(g, "vmem_bytes");
    t.default_scoped_vmem_bytes = optional_number<int64_t>(g, "default_scoped_vmem_bytes");
    t.hbm_bytes = optional_number<int64_t>(g, "hbm_bytes");
    t.smem_bytes = optional_number<int64_t>(g, "smem_bytes");
    t.hbm_bandwidth_bytes_per_s = optional_number<double>(g, "hbm_bandwidth_bytes_per_s");
    if (g.contains("peak_flops_per_s")) {
      for (const auto& [dtype, v] : g["peak_flops_per_s"].items()) {
        if (v.is_number()) t.peak_flops_per_s[dtype] = v.get<double>();
      }
    }
    if (g.contains("mxu") && g["mxu"].is_object()) {
      t.mxu_rows = g["mxu"].value("rows", 0);
      t.mxu_cols = g["mxu"].value("cols", 0);
      t.mxu_count_per_core = g["mxu"].value("count_per_core", 0);
    }
    t.tensorcores_per_chip = g.value("tensorcores_per_chip", 1);
    if (g.contains("sources")) {
      for (const auto& [field, src] : g["sources"].items()) {
        if (src.is_object() && src.contains("url"))
          t.source_urls[field] = src["url"].get<std::string>();
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

const std::vector<TpuGeneration>& tpu_generations() {
  static const std::vector<TpuGeneration> table = load();
  return table;
}

const TpuGeneration* find_tpu_generation(std::string_view name) {
  const std::string wanted = lower(name);
  for (const TpuGeneration& g : tpu_generations()) {
    if (lower(g.name) == wanted) return &g;
    for (const std::string& a : g.aliases) {
      if (lower(a) == wanted) return &g;
    }
  }
  return nullptr;
}

std::string known_generation_names() {
  std::string out;
  for (const TpuGeneration& g : tpu_generations()) {
    if (!out.empty()) out += ", ";
    out += g.name;
  }
  return out;
}

}  // namespace mk::knowledge
