#include "agents/prompts/prompt_templates.h"

#include <algorithm>

namespace mk::agents {

PromptTemplate parse_prompt_template(const std::string& name, const std::string& text) {
  PromptTemplate t;
  t.name = name;
  const size_t first_line_end = text.find('\n');
  const std::string first = text.substr(0, first_line_end);
  const std::string prefix = "version: ";
  if (first.rfind(prefix, 0) != 0 || first.size() == prefix.size()) {
    throw PromptError("prompt template `" + name + "`: the first line must be `version: N`");
  }
  try {
    t.version = std::stoi(first.substr(prefix.size()));
  } catch (const std::exception&) {
    throw PromptError("prompt template `" + name + "`: bad version line `" + first + "`");
  }
  const std::string marker = "\n=== user ===\n";
  const std::string rest = first_line_end == std::string::npos ? "" : text.substr(first_line_end);
  const size_t split = rest.find(marker);
  if (split == std::string::npos) {
    throw PromptError("prompt template `" + name + "` has no `=== user ===` line");
  }
  auto trim = [](std::string s) {
    const size_t b = s.find_first_not_of(" \n");
    const size_t e = s.find_last_not_of(" \n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  t.system = trim(rest.substr(0, split));
  t.user = trim(rest.substr(split + marker.size()));
  return t;
}

const PromptTemplate& prompt_template(const std::string& name) {
  static const std::vector<PromptTemplate> templates = [] {
    std::vector<PromptTemplate> out;
    for (const EmbeddedPrompt& p : embedded_prompts()) {
      out.push_back(parse_prompt_template(p.name, p.text));
    }
    return out;
  }();
  for (const PromptTemplate& t : templates) {
    if (t.name == name) return t;
  }
  throw PromptError("no prompt template named `" + name + "`");
}

const std::vector<std::string>& known_placeholders() {
  static const std::vector<std::string> names = {
      "kernel_source", "kernel_name",  "task_summary", "target_facts",   "knowledge",
      "attempts",      "plan",         "errors",       "metrics",        "failing_code",
      "attempt",       "max_attempts", "search_space", "max_shapes",     "max_values",
      "start_kernel",  "entry_point",  "diagnosis",    "device_profile", "input_shapes"};
  return names;
}

std::string render_prompt(const std::string& text,
                          const std::map<std::string, std::string>& values) {
  const auto& known = known_placeholders();
  std::string out;
  size_t at = 0;
  for (;;) {
    const size_t open = text.find("{{", at);
    if (open == std::string::npos) break;
    const size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) {
      throw PromptError("unclosed `{{` at byte " + std::to_string(open) + " of the template");
    }
    const std::string name = text.substr(open + 2, close - open - 2);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw PromptError("unknown placeholder {{" + name + "}} in the template");
    }
    auto value = values.find(name);
    if (value == values.end()) {
      throw PromptError("missing value for placeholder {{" + name + "}}");
    }
    out.append(text, at, open - at);
    out += value->second;
    at = close + 2;
  }
  out.append(text, at, std::string::npos);
  return out;
}

}  // namespace mk::agents
