// User settings: from initializationOptions, then workspace/configuration (section "maxkernel").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mk::server {

struct Settings {
  std::string target = "v5e";                      // TPU generation for static checks
  std::string host = "local";                      // where Test / Profile run
  std::string python;                              // python with JAX for the local host ("" = auto)
  nlohmann::json hosts = nlohmann::json::array();  // host definitions (docs/hosts.md)
  bool lower_on_save = true;
};

// Applies the recognised keys of `value` (either the section itself or {"maxkernel": {...}}).
// Invalid values are skipped and described in `problems`; the rest still applies.
void apply_settings(const nlohmann::json& value, Settings& settings,
                    std::vector<std::string>& problems);

}  // namespace mk::server
