// One place that decides where a run's candidates come from, for the CLI and the server alike:
// `none` -> the rule-based expander; any other --llm spec -> an LLM client (replay, OpenAI-
// compatible, Gemini, Anthropic) behind the LlmExpander, with knowledge and lessons as context.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agents/llm/llm_client.h"
#include "agents/llm/provider_config.h"
#include "agents/orchestration/candidate_evaluator.h"
#include "agents/orchestration/expander.h"
#include "agents/orchestration/hitl_session.h"
#include "agents/orchestration/search_params.h"
#include "knowledge/store.h"

namespace mk::agents {

struct ExpanderSetup {
  std::string llm_spec = "none";     // the run's --llm value
  llm::ProviderConfig llm_settings;  // timeouts, key, python for the replay server, recording
  Budget budget;                     // its tokens / usd limits bound the LLM client
  std::string kernel_class;          // for lessons
  std::string task_summary;          // what the agents are told the task is (text)
  // The run's located task (RunRecord::task): it says which function a written kernel defines.
  nlohmann::json task = nlohmann::json::object();
  knowledge::Store* store = nullptr;        // retrieval and lessons; may be null
  CandidateEvaluator* evaluator = nullptr;  // the debugger's compile check; may be null
};

struct ExpanderBundle {
  std::unique_ptr<llm::Client> client;  // null without an LLM
  std::unique_ptr<Expander> expander;
};

// The LLM client the setup names (budget applied); null for `none`. Throws llm::LlmError(Config)
// for a bad spec or a missing key, with a message for the user.
std::unique_ptr<llm::Client> make_llm_client(const ExpanderSetup& setup);

// Throws llm::LlmError(Config) for a bad spec or a missing key, with a message for the user.
ExpanderBundle make_expander(const ExpanderSetup& setup, const knowledge::TpuGeneration& target);

// The step-by-step session's proposer: RuleProposer for `none`, else an LlmProposer over
// make_llm_client(setup); `cancelled` stops its calls. Throws like make_llm_client.
std::unique_ptr<Proposer> make_proposer(const ExpanderSetup& setup,
                                        const knowledge::TpuGeneration& target,
                                        const llm::CancelFlag& cancelled = {});

// The target's facts in a few lines, for an agent's context.
std::string describe_target(const knowledge::TpuGeneration& target);

}  // namespace mk::agents
