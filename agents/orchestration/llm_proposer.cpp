#include "agents/orchestration/llm_proposer.h"

#include <stdexcept>

#include "agents/subagents/subagents.h"

namespace mk::agents {

namespace {

// The context every call starts from: the session's code, the target, and the user's feedback
// as the newest "earlier attempt" (the templates show attempts; the feedback is about the last).
AgentContext session_context(const LlmProposerOptions& options, const std::string& code,
                             const std::string& kernel, const std::string& feedback) {
  AgentContext context;
  context.kernel_source = code;
  context.kernel_name = kernel;
  context.task_summary = options.task_summary;
  context.target_facts = options.target_facts;
  context.token_budget = options.token_budget;
  if (!feedback.empty()) {
    Attempt said;
    said.strategy = "the previous proposal, which the user asked to revise";
    said.metrics = "The user's feedback: " + feedback;
    context.attempts.push_back(std::move(said));
  }
  return context;
}

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

LlmProposer::LlmProposer(std::unique_ptr<llm::Client> client, LlmProposerOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (!client_) throw std::invalid_argument("LlmProposer needs an LLM client");
}

LlmProposer::~LlmProposer() = default;

std::string LlmProposer::describe() const {
  return client_->describe();
}

std::string LlmProposer::plan(const PlanRequest& request) {
  const AgentContext context =
      session_context(options_, request.code, request.kernel, request.feedback);
  const Plan result = agents::plan(*client_, context, options_.cancelled);
  usage_ += result.usage;
  calls_ += result.llm_calls;
  if (!result.ok())
    throw std::runtime_error("the LLM planner's answer was unusable: " + result.error);
  std::string md = plan_document_head(
      request, " (LLM planner)",
      "Untick the strategies you do not want (or reorder or reword the lines), save\n"
      "this file, then answer Approve. Implement asks the LLM implementer to apply\n"
      "the ticked lines, in order, in one new version of the file.\n");
  for (const Strategy& s : result.strategies) {
    md += "- [x] " + one_line(s.name) + ": " + one_line(s.why);
    if (!s.expected_effect.empty()) md += " (expected: " + one_line(s.expected_effect) + ")";
    md += "\n";
  }
  return md;
}

Implementation LlmProposer::implement(const ImplementRequest& request) {
  Implementation out;
  const std::vector<std::string> items = ticked_plan_items(request.plan);
  if (items.empty()) {  // nothing ticked: nothing to ask for
    out.code = request.code;
    return out;
  }
  Plan chosen;
  Strategy combined;
  combined.name =
      items.size() == 1 ? items.front().substr(0, items.front().find(':')) : "the user's plan";
  combined.why = "apply, in this order:";
  for (size_t i = 0; i < items.size(); ++i)
    combined.why += "\n" + std::to_string(i + 1) + ". " + items[i];
  combined.expected_effect = "a faster kernel with the same results";
  chosen.strategies.push_back(std::move(combined));

  const AgentContext context =
      session_context(options_, request.code, request.kernel, request.feedback);
  const Code code = agents::implement(*client_, context, chosen, 0, options_.cancelled);
  usage_ += code.usage;
  calls_ += code.llm_calls;
  if (!code.ok())
    throw std::runtime_error("the LLM implementer's answer was unusable: " + code.error);
  out.code = code.source;
  out.applied = items;
  return out;
}

std::string LlmProposer::debug(const DebugRequest& request) {
  // With nothing else to show, the prompt's "written from" section says so rather than showing
  // the failing file again as if it worked.
  const AgentContext context = session_context(
      options_,
      request.origin.empty()
          ? "# (the failing file above is the session's own code; an in-file task's reference\n"
            "#  function is in it)\n"
          : request.origin,
      request.kernel, "");
  Code failing;
  failing.source = request.code;
  failing.strategy = "the session's candidate";
  const Code fixed = agents::debug(*client_, context, failing, request.report, request.attempt,
                                   request.max_attempts, options_.cancelled);
  usage_ += fixed.usage;
  calls_ += fixed.llm_calls;
  if (!fixed.ok())
    throw std::runtime_error("the LLM debugger's answer was unusable: " + fixed.error);
  return fixed.source;
}

}  // namespace mk::agents
