#include "lsp/server/settings.h"

#include "knowledge/tpu_generations.h"

namespace mk::server {

void apply_settings(const nlohmann::json& value, Settings& settings,
                    std::vector<std::string>& problems) {
  if (!value.is_object()) return;
  const nlohmann::json& section =
      value.contains("maxkernel") && value["maxkernel"].is_object() ? value["maxkernel"] : value;
  auto string_setting = [&](const char* key, std::string& out) {
    if (!section.contains(key)) return;
    if (section[key].is_string()) {
      out = section[key].get<std::string>();
    } else {
      problems.push_back(std::string("maxkernel.") + key + " must be a string");
    }
  };
  string_setting("host", settings.host);
  string_setting("python", settings.python);
  if (section.contains("hosts")) {
    if (section["hosts"].is_array()) {
      settings.hosts = section["hosts"];
    } else {
      problems.push_back("maxkernel.hosts must be a list of host objects");
    }
  }
  if (section.contains("lowerOnSave")) {
    if (section["lowerOnSave"].is_boolean()) {
      settings.lower_on_save = section["lowerOnSave"].get<bool>();
    } else {
      problems.push_back("maxkernel.lowerOnSave must be true or false");
    }
  }
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
