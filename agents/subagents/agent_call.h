// One sub-agent call: render the template, send it, parse the answer; on a malformed answer ONE
// retry whose prompt quotes the parse error; a second malformed answer is a clear error.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "agents/llm/llm_client.h"
#include "agents/subagents/agent_context.h"

namespace mk::agents {

// What every sub-agent result carries.
struct AgentOutcome {
  std::string error;  // empty: the answer was usable
  llm::Usage usage;   // summed over the calls made
  int llm_calls = 0;
  int prompt_version = 0;
  bool ok() const { return error.empty(); }
};

void add_usage(llm::Usage& total, const llm::Usage& more);

struct AgentPrompt {
  std::string agent;                          // template name and request purpose
  std::map<std::string, std::string> extras;  // agent-specific placeholder values
  int max_output_tokens = 4096;
};

// The request for the template with the context trimmed to its budget (the extras count against
// it). Throws PromptError on a template/placeholder problem.
llm::ChatRequest build_request(const AgentPrompt& prompt, const AgentContext& context);

// The retry's extra user message.
std::string retry_message(const std::string& parse_error);

// Sends `request`; `parse` throws AnswerFormatError on a malformed answer. LlmError from the
// client (network, budget, cancel) propagates to the caller.
void call_with_one_retry(llm::Client& client, const llm::ChatRequest& request,
                         const std::function<void(const std::string&)>& parse,
                         AgentOutcome& outcome, const llm::CancelFlag& cancelled = {});

// What every sub-agent call does: records the template's version in `outcome`, builds the request
// from `prompt` and `context`, and sends it with one retry.
void ask_agent(llm::Client& client, const AgentContext& context, const AgentPrompt& prompt,
               const std::function<void(const std::string&)>& parse, AgentOutcome& outcome,
               const llm::CancelFlag& cancelled = {});

}  // namespace mk::agents
