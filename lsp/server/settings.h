// User settings: from initializationOptions, then workspace/configuration (section "maxkernel").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mk::server {

struct Settings {
  std::string target = "v5e";  // TPU generation for static checks
  // Where Test / Profile / searches run: one host name, or several joined by commas (the
  // setting may be a list or "a,b"); several share the work (tpu::HostPool).
  std::string host = "local";
  std::string python;                              // python with JAX for the local host ("" = auto)
  nlohmann::json hosts = nlohmann::json::array();  // host definitions (docs/hosts.md)
  bool lower_on_save = true;
  nlohmann::json budget = nlohmann::json::object();  // Auto / graph limits (docs/lsp.md)
  // A search's autotune phase: configurations per phase (0 = none; unset: automatic, 8 on a
  // TPU or GPU host and none on a CPU host, agents::SearchParams::kAutotuneAutomatic).
  int autotune_configs = -1;
  // {provider: none|openai|gemini|anthropic|replay, model, baseUrl, fixture}; the key is never a
  // setting: it comes from the editor's secret store (initializationOptions.secrets.llm or the
  // maxkernel/setApiKey notification) or the provider's environment variable.
  nlohmann::json llm = nlohmann::json::object();
};

// The --llm spec the settings name: "none", "replay:FILE", "openai:MODEL[@URL]", "gemini:MODEL",
// "anthropic:MODEL". Throws std::invalid_argument naming the setting that is wrong.
std::string llm_spec_of(const nlohmann::json& llm);

// Applies the recognised keys of `value` (either the section itself or {"maxkernel": {...}}).
// Invalid values are skipped and described in `problems`; the rest still applies.
void apply_settings(const nlohmann::json& value, Settings& settings,
                    std::vector<std::string>& problems);

}  // namespace mk::server
