// apply_config: one configuration written into the source as byte-range edits.
#include <stdexcept>

#include "agents/tuning/python_source.h"
#include "agents/tuning/search_space.h"

namespace mk::agents {

namespace {

const ModuleBinding* last_binding(const ModuleConstants& constants, const std::string& name) {
  const ModuleBinding* found = nullptr;
  for (const ModuleBinding& b : constants.bindings) {
    if (b.name == name) found = &b;
  }
  return found;
}

}  // namespace

std::string apply_config(const std::string& source, const nlohmann::json& config) {
  if (!config.is_object()) {
    throw std::invalid_argument("a configuration is a JSON object {\"NAME\": value}, got " +
                                config.dump());
  }
  const ModuleConstants constants = read_module_constants(source);
  std::vector<SourceEdit> edits;
  std::vector<std::string> additions;  // new TUNED_PARAMS entries, `"key": value`
  for (const auto& [name, value] : config.items()) {
    const std::string literal = python_literal(value);
    if (name == "TUNED_PARAMS") {
      throw std::invalid_argument("TUNED_PARAMS itself cannot be a parameter; name its keys");
    }
    if (const ModuleBinding* binding = last_binding(constants, name)) {
      edits.push_back({binding->value_start, binding->value_end, literal});
      continue;
    }
    if (!constants.tuned_params) {
      throw std::invalid_argument("parameter `" + name +
                                  "` is neither a module-level constant nor a TUNED_PARAMS key "
                                  "(the module has no TUNED_PARAMS dict literal)");
    }
    bool replaced = false;
    for (const auto& entry : constants.tuned_params->entries) {
      if (entry.key == name) {
        edits.push_back({entry.value_start, entry.value_end, literal});
        replaced = true;
      }
    }
    if (!replaced) additions.push_back(python_literal(nlohmann::json(name)) + ": " + literal);
  }
  if (!additions.empty()) {
    const TunedParamsDict& dict = *constants.tuned_params;
    std::string text;
    const bool empty = dict.entries.empty();
    if (dict.multiline && !empty) {
      // One entry per line, in the dict's own indentation, before the closing brace's line.
      for (const std::string& add : additions) text += "\n" + dict.entry_indent + add + ",";
      // Insert right after the last entry (and its comma, added if missing).
      const uint32_t after_last = dict.entries.back().value_end;
      std::string lead = dict.trailing_comma ? "" : ",";
      if (dict.trailing_comma) {
        // Skip to just past the existing comma.
        const size_t comma = source.find(',', after_last);
        edits.push_back({static_cast<uint32_t>(comma + 1), static_cast<uint32_t>(comma + 1),
                         text.substr(0, text.size() - 1) + ","});
      } else {
        edits.push_back({after_last, after_last, lead + text.substr(0, text.size() - 1)});
      }
    } else {
      for (size_t i = 0; i < additions.size(); ++i) text += (i ? ", " : "") + additions[i];
      if (empty) {
        edits.push_back({dict.open_brace + 1, dict.close_brace, text});
      } else {
        const uint32_t after_last = dict.entries.back().value_end;
        if (dict.trailing_comma) {
          const size_t comma = source.find(',', after_last);
          edits.push_back({static_cast<uint32_t>(comma + 1), static_cast<uint32_t>(comma + 1),
                           " " + text + ","});
        } else {
          edits.push_back({after_last, after_last, ", " + text});
        }
      }
    }
  }
  return apply_edits(source, std::move(edits));
}

}  // namespace mk::agents
