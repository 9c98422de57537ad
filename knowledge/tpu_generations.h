// The TPU generations table (knowledge/data/tpu_generations.json, embedded at build time): VMEM,
// HBM, peak FLOP/s and MXU shape per generation, each figure with its source.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mk::knowledge {

struct TpuGeneration {
  std::string name;
  std::vector<std::string> aliases;
  std::optional<int64_t> vmem_bytes;
  std::optional<int64_t> default_scoped_vmem_bytes;
  std::optional<int64_t> hbm_bytes;
  std::optional<int64_t> smem_bytes;
  std::optional<double> hbm_bandwidth_bytes_per_s;
  std::map<std::string, double> peak_flops_per_s;  // by dtype: "bf16", "int8", "fp8"
  int mxu_rows = 0, mxu_cols = 0, mxu_count_per_core = 0;
  int tensorcores_per_chip = 1;
  std::map<std::string, std::string> source_urls;  // field -> URL

  // VMEM a kernel may use without raising vmem_limit_bytes: the default scoped limit, else VMEM.
  std::optional<int64_t> scoped_vmem_limit() const {
    return default_scoped_vmem_bytes ? default_scoped_vmem_bytes : vmem_bytes;
  }
};

const std::vector<TpuGeneration>& tpu_generations();
// Finds a generation by name or alias, case-insensitively ("v5e", "TPU v5 lite", "trillium").
const TpuGeneration* find_tpu_generation(std::string_view name);
std::string known_generation_names();  // "v4, v5e, v5p, v6e, v7"

}  // namespace mk::knowledge
