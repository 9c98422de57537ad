#include "lsp/server/settings.h"

#include "knowledge/tpu_generations.h"

namespace mk::server {

void apply_settings(const nlohmann::json& value, Settings& settings,
                    std::vector<std::string>& problems) {
  if (!value.is_object()) return;
  const nlohmann::json& section =
      value.contains("maxkernel") && value["maxkernel"].is_object() ? value["maxkernel"] : value;
  if (section.contains("target")) {
    const auto& t = section["target"];
    if (!t.is_string()) {
      problems.push_back("maxkernel.target must be a string");
    } else if (const auto* gen = knowledge::find_tpu_generation(t.get<std::string>())) {
      settings.target = gen->name;
    } else {
      problems.push_back("maxkernel.target: unknown TPU generation '" + t.get<std::string>() +
                         "' (known: " + knowledge::known_generation_names() + ")");
    }
  }
}

}  // namespace mk::server
