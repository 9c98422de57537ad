#include "agents/subagents/agent_context.h"

#include <algorithm>

namespace mk::agents {

int approx_tokens(const std::string& text) {
  return static_cast<int>((text.size() + 3) / 4);
}

namespace {

std::string render_knowledge(const std::vector<std::string>& passages) {
  if (passages.empty()) return "(none)";
  std::string out;
  for (size_t i = 0; i < passages.size(); ++i) {
    out += (i ? "\n\n" : "") + ("[" + std::to_string(i + 1) + "] ") + passages[i];
  }
  return out;
}

std::string render_attempts(const std::vector<Attempt>& attempts) {
  if (attempts.empty()) return "(none)";
  std::string out;
  for (size_t i = 0; i < attempts.size(); ++i) {
    const Attempt& a = attempts[i];
    out += (i ? "\n\n" : "") + ("### Attempt " + std::to_string(i + 1));
    if (!a.strategy.empty()) out += ": " + a.strategy;
    out += "\n";
    out += a.error.empty() ? "result: ran\n" : "error:\n" + a.error + "\n";
    if (!a.metrics.empty()) out += "metrics: " + a.metrics + "\n";
    if (!a.code.empty()) out += "```python\n" + a.code + "\n```";
  }
  return out;
}

int context_tokens(const AgentContext& c) {
  int total = 0;
  for (const auto& [name, value] : context_values(c)) total += approx_tokens(value);
  return total;
}

void cut(std::string& text, size_t keep) {
  if (text.size() <= keep) return;
  text.resize(keep);
  text += " [...cut to fit the budget]";
}

}  // namespace

std::map<std::string, std::string> context_values(const AgentContext& c) {
  return {{"kernel_source", c.kernel_source},
          {"kernel_name", c.kernel_name.empty() ? "(first kernel)" : c.kernel_name},
          {"task_summary", c.task_summary.empty() ? "(none)" : c.task_summary},
          {"target_facts", c.target_facts.empty() ? "(none)" : c.target_facts},
          {"knowledge", render_knowledge(c.knowledge)},
          {"attempts", render_attempts(c.attempts)}};
}

TrimmedContext trim_to_budget(const AgentContext& context, int reserved_tokens) {
  TrimmedContext t;
  t.context = context;
  AgentContext& c = t.context;
  auto fits = [&] { return reserved_tokens + context_tokens(c) <= c.token_budget; };
  while (!fits() && !c.attempts.empty()) {
    c.attempts.erase(c.attempts.begin());
    ++t.dropped_attempts;
  }
  while (!fits() && !c.knowledge.empty()) {
    c.knowledge.pop_back();
    ++t.dropped_passages;
  }
  for (std::string* text : {&c.target_facts, &c.task_summary}) {
    if (fits()) break;
    const int over = reserved_tokens + context_tokens(c) - c.token_budget;
    const size_t keep_chars = static_cast<size_t>(std::max(0, approx_tokens(*text) - over - 8)) * 4;
    cut(*text, keep_chars);
  }
  t.tokens = reserved_tokens + context_tokens(c);
  t.over_budget = t.tokens > c.token_budget;
  return t;
}

std::string with_line_numbers(const std::string& code) {
  std::string out;
  int line = 1;
  size_t at = 0;
  while (at <= code.size()) {
    const size_t end = code.find('\n', at);
    const std::string text =
        code.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (end == std::string::npos && text.empty() && line > 1) break;
    std::string number = std::to_string(line++);
    if (number.size() < 4) number.insert(0, 4 - number.size(), ' ');
    out += number + " | " + text + "\n";
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

}  // namespace mk::agents
