// What a sub-agent is told: the kernel, the task, target facts, knowledge passages and earlier
// attempts, trimmed to a token budget by dropping the least important material first.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mk::agents {

struct Attempt {
  std::string code;      // the whole file that was tried
  std::string error;     // the worker's error (with line numbers), empty when it ran
  std::string metrics;   // measured / predicted numbers, in words or JSON text
  std::string strategy;  // what it tried
};

struct AgentContext {
  std::string kernel_source, kernel_name, task_summary, target_facts;
  std::vector<std::string> knowledge;  // passages, best first
  std::vector<Attempt> attempts;       // oldest first
  int token_budget = 12000;            // for the whole prompt, approx tokens = chars / 4
};

int approx_tokens(const std::string& text);

// The context with material dropped until `reserved_tokens` (the template and the agent's own
// extras) plus the rendered context fit the budget: the oldest attempts first, then the last
// knowledge passages, then the target facts and task summary are cut short. The kernel source
// is never touched (if it alone is over budget, everything else goes and it is sent whole).
struct TrimmedContext {
  AgentContext context;
  int tokens = 0;  // approx tokens of reserved + rendered context
  int dropped_attempts = 0;
  int dropped_passages = 0;
  bool over_budget = false;
};
TrimmedContext trim_to_budget(const AgentContext& context, int reserved_tokens);

// The placeholder values of a context: kernel_source, kernel_name, task_summary, target_facts,
// knowledge (numbered passages), attempts (one section each, newest last).
std::map<std::string, std::string> context_values(const AgentContext& context);

// The file with 1-based line numbers, for the debugger ("  12 | code").
std::string with_line_numbers(const std::string& code);

}  // namespace mk::agents
