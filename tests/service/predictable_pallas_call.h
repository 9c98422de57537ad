// A lowering fact of one pallas_call with enough for the TPU time model to predict it, for tests
// that script a worker's lower reply (so an unscored or model-scored result is a choice).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mk::agents {

inline nlohmann::json predictable_pallas_call(const std::string& compiler_params) {
  return {{"kernel", "_k"},
          {"grid", {8}},
          {"compiler_params", compiler_params},
          {"operands", {{{"role", "input"}, {"dtype", "float32"}}}},
          {"cost", {{"flops", 1.0e9}}},
          {"traffic",
           {{"available", true},
            {"hbm_bytes_read", 1.0e8},
            {"hbm_bytes_written", 1.0e7},
            {"grid_steps", 8}}}};
}

}  // namespace mk::agents
