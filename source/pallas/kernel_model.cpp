#include "source/pallas/kernel_model.h"

#include <array>

namespace mk::pallas {

const char* to_string(Backend backend) {
  switch (backend) {
    case Backend::Tpu:
      return "TPU";
    case Backend::TritonGpu:
      return "GPU (Triton)";
    case Backend::MosaicGpu:
      return "GPU (Mosaic)";
  }
  return "?";
}

const char* to_string(MemorySpace space) {
  switch (space) {
    case MemorySpace::Default:
    case MemorySpace::Vmem:
      return "VMEM";
    case MemorySpace::Smem:
      return "SMEM";
    case MemorySpace::Any:
      return "ANY (HBM, manual DMA)";
    case MemorySpace::Hbm:
      return "HBM";
    case MemorySpace::Semaphore:
      return "semaphore";
    case MemorySpace::Gpu:
      return "GPU memory";
    case MemorySpace::Unknown:
      return "?";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  struct Entry {
    const char* name;
    const char* canonical;
    int bits;
  };
  static constexpr std::array<Entry, 22> kTable{{
      {"float32", "float32", 32},
      {"f32", "float32", 32},
      {"float", "float32", 32},
      {"bfloat16", "bfloat16", 16},
      {"bf16", "bfloat16", 16},
      {"float16", "float16", 16},
      {"f16", "float16", 16},
      {"half", "float16", 16},
      {"float64", "float64", 64},
      {"int32", "int32", 32},
      {"uint32", "uint32", 32},
      {"int16", "int16", 16},
      {"uint16", "uint16", 16},
      {"int8", "int8", 8},
      {"uint8", "uint8", 8},
      {"int4", "int4", 4},
      {"bool_", "bool", 8},
      {"bool", "bool", 8},
      {"float8_e4m3fn", "float8_e4m3fn", 8},
      {"float8_e5m2", "float8_e5m2", 8},
      {"int64", "int64", 64},
      {"float8_e4m3b11fnuz", "float8_e4m3b11fnuz", 8},
  }};
  for (const Entry& e : kTable) {
    if (name == e.name) return DType{e.canonical, e.bits};
  }
  return std::nullopt;
}

const std::vector<TaskConventions::Binding>& TaskConventions::bindings() {
  static const std::vector<Binding> all = {{"CONFIG", &TaskConventions::config},
                                           {"create_inputs", &TaskConventions::create_inputs},
                                           {"workload", &TaskConventions::workload},
                                           {"get_flops", &TaskConventions::get_flops},
                                           {"TUNED_PARAMS", &TaskConventions::tuned_params},
                                           {"get_inputs", &TaskConventions::get_inputs},
                                           {"computation", &TaskConventions::computation},
                                           {"reference", &TaskConventions::reference},
                                           {"make_inputs", &TaskConventions::make_inputs}};
  return all;
}

std::string TaskConventions::form() const {
  if (config && create_inputs && workload) return "jaxbench";
  if (get_inputs && computation) return "maxkernel";
  if (reference && make_inputs) return "infile";
  return "";
}

}  // namespace mk::pallas
