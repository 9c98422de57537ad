// The sub-agents: Planner, Implementer, Debugger, Tester, Autotuner, ProfileAnalyst (and the
// Planner and Implementer from a reference, for a task with no kernel yet). Each renders
// its template (agents/prompts/<name>.md) with a trimmed AgentContext, calls the LLM, validates
// the answer (one retry quoting the parse error), and returns the result with the usage of its
// calls. A malformed answer twice is `error` on the result; LlmError (network, budget, cancel)
// propagates.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "agents/llm/llm_client.h"
#include "agents/subagents/agent_call.h"
#include "agents/subagents/agent_context.h"
#include "agents/subagents/answer_parsers.h"
#include "agents/tuning/search_space.h"

namespace mk::agents {

struct Plan : AgentOutcome {
  std::vector<Strategy> strategies;  // best first
};

struct Code : AgentOutcome {
  std::string source;    // the whole file; parses cleanly and has a pallas_call
  std::string strategy;  // what it implements / fixes
};

struct ExtraCases : AgentOutcome {
  std::vector<ShapeCase> shapes;  // only sizes: never a reference, inputs or tolerances
};

struct TuningSpace : AgentOutcome {
  std::vector<TunableParam> params;  // derived, then widened by the LLM when one was given
  nlohmann::json worker_space;       // {"NAME": [values]} for the worker's autotune op
  int llm_values_added = 0;
  int llm_values_rejected = 0;  // proposed values that break the block rules
};

struct ProfileAnalysis : AgentOutcome {
  Analysis analysis;
};

// Planner: strategies (name, why, expected effect) for the kernel in the context. `diagnosis`:
// what limits the kernel, in words (the rule diagnosis and the profile analyst's answer), for the
// template's diagnosis section; the first form says "(none)" there.
Plan plan(llm::Client& client, const AgentContext& context, const llm::CancelFlag& cancelled = {});
Plan plan(llm::Client& client, const AgentContext& context, const std::string& diagnosis,
          const llm::CancelFlag& cancelled = {});

// Implementer: the whole file rewritten to apply plan.strategies[strategy_index].
Code implement(llm::Client& client, const AgentContext& context, const Plan& plan,
               size_t strategy_index = 0, const llm::CancelFlag& cancelled = {});

// Debugger: fixes `failing` given the worker's error (with line numbers; the failing file is
// shown numbered). attempt is 1-based; attempts beyond max_attempts are refused without a call.
Code debug(llm::Client& client, const AgentContext& context, const Code& failing,
           const std::string& error, int attempt, int max_attempts,
           const llm::CancelFlag& cancelled = {});

// What the from-reference agents are given beside the context (whose kernel_source is the task's
// reference file): the entry function the new file must define, and the kernel the templates
// wrote from the reference ("" = none), as a starting point.
struct ReferenceStart {
  std::string entry_point;  // in words: "`candidate(x, b)`, called with ..."
  std::string start_kernel;
};

// Planner from the reference: whole-kernel designs for a reference that has no kernel yet
// (agents/prompts/planner_from_reference.md).
Plan plan_from_reference(llm::Client& client, const AgentContext& context,
                         const ReferenceStart& start, const llm::CancelFlag& cancelled = {});

// Implementer from the reference: a new file that follows plan.strategies[strategy_index]
// (agents/prompts/implementer_from_reference.md).
Code implement_from_reference(llm::Client& client, const AgentContext& context,
                              const ReferenceStart& start, const Plan& plan,
                              size_t strategy_index = 0, const llm::CancelFlag& cancelled = {});

// Tester: extra input shapes only, as maps of the task's input sizes (`input_shapes`, the task's
// array inputs) to other sizes, validated by shape_case_error, at most max_shapes. The reference,
// the inputs function and the tolerances always come from the task.
ExtraCases extra_test_cases(llm::Client& client, const AgentContext& context,
                            const std::vector<std::vector<int64_t>>& input_shapes,
                            size_t max_shapes = 4, const llm::CancelFlag& cancelled = {});

// Autotuner: the search space derived from context.kernel_source; with a client, the LLM may add
// values to the derived parameters (never new parameters). Works with client == nullptr.
TuningSpace tuning_space(llm::Client* client, const AgentContext& context,
                         const std::string& metrics, size_t max_configs = 64,
                         const llm::CancelFlag& cancelled = {});

// What the ProfileAnalyst reads beside the context, each in words ("" = none).
struct ProfileFacts {
  std::string metrics;         // the worker's lowering facts and the time model's predictions
  std::string diagnosis;       // the rule-based diagnosis of the same facts
  std::string device_profile;  // a profile measured on the device
};

// ProfileAnalyst: the bottleneck and next strategies from the measurements.
ProfileAnalysis analyze_profile(llm::Client& client, const AgentContext& context,
                                const ProfileFacts& facts, const llm::CancelFlag& cancelled = {});

}  // namespace mk::agents
