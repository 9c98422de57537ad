#include "lsp/server/settings.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "knowledge/tpu_generations.h"

namespace mk::server {

namespace {

// "a", "a, b" or ["a", "b"] -> "a,b" (spaces dropped, repeats kept once); nullopt when the value
// is not a string or a list of strings, or names an empty host.
std::optional<std::string> host_list_of(const nlohmann::json& value) {
  std::vector<std::string> parts;
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    for (size_t start = 0;;) {
      const size_t comma = text.find(',', start);
      parts.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (value.is_array() && !value.empty()) {
    for (const auto& v : value) {
      if (!v.is_string()) return std::nullopt;
      parts.push_back(v.get<std::string>());
    }
  } else {
    return std::nullopt;
  }
  std::string joined;
  std::vector<std::string> seen;
  for (std::string& part : parts) {
    const size_t first = part.find_first_not_of(" \t");
    if (first == std::string::npos) return std::nullopt;
    part = part.substr(first, part.find_last_not_of(" \t") - first + 1);
    if (std::find(seen.begin(), seen.end(), part) != seen.end()) continue;
    seen.push_back(part);
    joined += (joined.empty() ? "" : ",") + part;
  }
  return joined;
}

// The settings editors/settings.schema.json declares (tests/transcript/test_settings.py keeps the
// two the same). Client-only ones (serverPath, server.*, trace.*) arrive with the section and are
// known but not read here.
struct KnownSettings {
  const char* folder;  // "" for the section itself
  std::vector<std::string> names;
};
const std::vector<KnownSettings>& known_settings() {
  static const std::vector<KnownSettings> known = {
      {"",
       {"secrets",  // initializationOptions' API key, when a client sends the section flat
        "serverPath", "server", "trace", "target", "host", "hosts", "python", "lowerOnSave", "llm",
        "autotuneConfigs", "budget"}},
      {"llm", {"provider", "model", "baseUrl", "fixture"}},
      {"budget",
       {"maxCostUsd", "maxIterations", "maxWallSeconds", "targetSpeedup", "maxEvaluations",
        "patience"}},
      {"server", {"extraArgs"}},
      {"trace", {"server"}},
  };
  return known;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(a[i - 1]) == std::tolower(b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// One problem per key of `object` that is not a setting, with the nearest name when one is close.
void report_unknown(const nlohmann::json& object, const std::string& prefix,
                    const std::vector<std::string>& names, std::vector<std::string>& problems) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    // Suggest the nearest name two edits away at most, or one the key starts with ("budgets").
    std::string nearest;
    size_t best = 3;
    for (const std::string& n : names) {
      const size_t d = key.rfind(n, 0) == 0 ? 1 : edit_distance(key, n);
      if (d < best) {
        best = d;
        nearest = n;
      }
    }
    problems.push_back(prefix + key + " is not a setting" +
                       (nearest.empty() ? "" : " (did you mean " + prefix + nearest + "?)"));
  }
}

}  // namespace

void apply_settings(const nlohmann::json& value, Settings& settings,
                    std::vector<std::string>& problems) {
  if (!value.is_object()) return;
  const nlohmann::json& section =
      value.contains("maxkernel") && value["maxkernel"].is_object() ? value["maxkernel"] : value;
  for (const KnownSettings& k : known_settings()) {
    const bool top = *k.folder == '\0';
    if (top) {
      report_unknown(section, "maxkernel.", k.names, problems);
    } else if (section.contains(k.folder) && section[k.folder].is_object()) {
      report_unknown(section[k.folder], std::string("maxkernel.") + k.folder + ".", k.names,
                     problems);
    }
  }
  auto string_setting = [&](const char* key, std::string& out) {
    if (!section.contains(key)) return;
    if (section[key].is_string()) {
      out = section[key].get<std::string>();
    } else {
      problems.push_back(std::string("maxkernel.") + key + " must be a string");
    }
  };
  if (section.contains("host")) {
    if (auto names = host_list_of(section["host"])) {
      settings.host = *names;
    } else {
      problems.push_back(
          "maxkernel.host must be a host name, a list of host names or \"a,b\" (no empty names)");
    }
  }
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
  if (section.contains("budget")) {
    if (section["budget"].is_object()) {
      settings.budget = section["budget"];
    } else {
      problems.push_back("maxkernel.budget must be an object {maxIterations, maxWallSeconds, ...}");
    }
  }
  if (section.contains("autotuneConfigs")) {
    const auto& n = section["autotuneConfigs"];
    if (n.is_null()) {
      settings.autotune_configs = -1;  // automatic: from the host's platform
    } else if (n.is_number_integer() && n.get<int64_t>() >= 0 && n.get<int64_t>() <= 4096) {
      settings.autotune_configs = n.get<int>();
    } else {
      problems.push_back(
          "maxkernel.autotuneConfigs must be a whole number from 0 (no autotune phase) to 4096, "
          "or null (automatic)");
    }
  }
  if (section.contains("llm")) {
    if (!section["llm"].is_object()) {
      problems.push_back("maxkernel.llm must be an object {provider, model, baseUrl}");
    } else {
      try {
        llm_spec_of(section["llm"]);
        settings.llm = section["llm"];
      } catch (const std::invalid_argument& e) {
        problems.push_back(e.what());
      }
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

std::string llm_spec_of(const nlohmann::json& llm) {
  if (!llm.is_object()) return "none";
  auto text = [&](const char* key) -> std::string {
    if (!llm.contains(key) || llm[key].is_null()) return "";
    if (!llm[key].is_string())
      throw std::invalid_argument(std::string("maxkernel.llm.") + key + " must be a string");
    return llm[key].get<std::string>();
  };
  const std::string provider = text("provider"), model = text("model"), base = text("baseUrl");
  if (provider.empty() || provider == "none") return "none";
  if (provider == "replay") {
    const std::string fixture = text("fixture");
    if (fixture.empty())
      throw std::invalid_argument("maxkernel.llm.fixture is required for replay");
    return "replay:" + fixture;
  }
  if (provider != "openai" && provider != "gemini" && provider != "anthropic")
    throw std::invalid_argument("maxkernel.llm.provider: '" + provider +
                                "' is not none, openai, gemini, anthropic or replay");
  if (model.empty()) throw std::invalid_argument("maxkernel.llm.model is required for " + provider);
  return provider + ":" + model + (provider == "openai" && !base.empty() ? "@" + base : "");
}

}  // namespace mk::server
