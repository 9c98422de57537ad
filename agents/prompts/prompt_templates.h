// The sub-agents' prompt templates (agents/prompts/*.md, embedded at build time) and a strict
// renderer: {{name}} placeholders, each from a fixed vocabulary, each given a value.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mk::agents {

struct EmbeddedPrompt {
  const char* name;  // "planner"
  const char* text;  // the .md file
};
const std::vector<EmbeddedPrompt>& embedded_prompts();  // generated

class PromptError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A template split into its parts. File format: a first line `version: N`, the system part, a
// line `=== user ===`, the user part.
struct PromptTemplate {
  std::string name;
  int version = 0;
  std::string system;
  std::string user;
};
PromptTemplate parse_prompt_template(const std::string& name, const std::string& text);
// The embedded template by name; throws PromptError for an unknown name.
const PromptTemplate& prompt_template(const std::string& name);

// Every placeholder a template may use.
const std::vector<std::string>& known_placeholders();
// Replaces every {{name}}. Throws PromptError naming the placeholder when it is not in
// known_placeholders() (unknown) or has no value in `values` (missing), or a `{{` is unclosed.
std::string render_prompt(const std::string& text,
                          const std::map<std::string, std::string>& values);

}  // namespace mk::agents
