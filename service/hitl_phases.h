// The work of each step-by-step phase, off the main loop: plan and implement through the
// Proposer, and validate / test / autotune / profile on a kernel host. Each returns what the
// session shows and keeps; HitlRuns applies it on the main loop.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/candidate_evaluator.h"
#include "agents/orchestration/hitl_session.h"
#include "agents/orchestration/hitl_suggestion.h"
#include "agents/orchestration/run_store.h"
#include "agents/orchestration/search_params.h"
#include "knowledge/store.h"
#include "knowledge/tpu_generations.h"
#include "service/finding.h"
#include "service/kernel_diagnosis.h"
#include "tpu/host/host_pool.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

// As many configurations as a search's autotune phase tries on a TPU or GPU host; the user asked
// for this phase, so it runs on a CPU host too (scored by the model's predictions).
inline constexpr int kHitlAutotuneConfigs = agents::SearchParams::kAutotuneOnDevices;

struct HitlPhaseOutcome {
  std::string summary;
  std::string plan;                          // plan: the markdown
  std::string proposed;                      // implement/autotune: the candidate to send as an edit
  std::vector<Finding> diagnostics;          // validate/test: MK310/MK311 findings
  bool has_diagnostics = false;              // replace the session's diagnostics
  std::string report;                        // profile: appended to the plan document
  std::optional<KernelDiagnosis> diagnosis;  // profile: what limits the session's code
  std::optional<agents::HitlSuggestion> suggestion;  // profile: the step it suggests next
  std::optional<agents::NodeRecord> node;            // an evaluated candidate for the run
  // test: what the debugger would be given (agents::debug_text: the error with its lines, or the
  // correctness report); "" when the candidate is correct or the failure is not its own
  std::string debug_report;
  std::string fix;   // debug: the debugger's whole file, for the user to edit before running it
  llm::Usage usage;  // plan/implement: what the LLM calls cost
  int llm_calls = 0;
};

// One host phase's inputs: the candidate (the session's code) against the file's task.
struct HitlHostJob {
  tpu::HostPool* host = nullptr;  // one host or several (the least busy runs each job)
  tpu::KernelRequest request;     // file, source, task
  std::string code;
  std::string kernel;  // the kernel function's name
  std::string run_id;
  const knowledge::TpuGeneration* target = nullptr;
  std::function<bool()> cancelled;
  // The last profile's diagnosis of this code, if any: autotune keeps the block sizes on the
  // side it asks for (larger or smaller) when the space is trimmed.
  std::optional<agents::Diagnosis> diagnosis;
  // Autotune's per-configuration cache (the store file's tuning cache); null: uncached, and
  // `uncached_reason` (when set) says why in the summary.
  knowledge::Store* tuning_cache = nullptr;
  std::string uncached_reason;
};

HitlPhaseOutcome hitl_plan(agents::Proposer& proposer, const agents::PlanRequest& request);
HitlPhaseOutcome hitl_implement(agents::Proposer& proposer,
                                const agents::ImplementRequest& request);
// The test phase's "Debug this": one debugger call on the test's report; the fix is a file the
// user may edit before "Run the fix" applies it.
HitlPhaseOutcome hitl_debug(agents::Proposer& proposer, const agents::DebugRequest& request);
// Lowers for TPU; an error becomes an MK310 finding on the line the worker names.
HitlPhaseOutcome hitl_validate(const HitlHostJob& job);
// Lower + evaluate + score; an MK311 verdict and a run node (and the debugger's report when the
// candidate is wrong or failed).
HitlPhaseOutcome hitl_test(const HitlHostJob& job);
// The autotune phase over the code's derived space (at most kHitlAutotuneConfigs
// configurations, one worker call, cached per configuration); the best configuration written in
// when it beats the kernel's own.
HitlPhaseOutcome hitl_autotune(const HitlHostJob& job);
// Profiles the code and diagnoses it (service kernel_checks); the report (for plan.md) has the
// profile, the diagnosis's full summary and the suggested next step with its reason.
HitlPhaseOutcome hitl_profile(const HitlHostJob& job);

}  // namespace mk::service
