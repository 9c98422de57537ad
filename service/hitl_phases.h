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
#include "knowledge/tpu_generations.h"
#include "service/finding.h"
#include "service/kernel_diagnosis.h"
#include "tpu/host/host_pool.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

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
  llm::Usage usage;                                  // plan/implement: what the LLM calls cost
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
  // The last profile's diagnosis of this code, if any: autotune tries the block moves it asks
  // for (larger or smaller) first.
  std::optional<agents::Diagnosis> diagnosis;
};

HitlPhaseOutcome hitl_plan(agents::Proposer& proposer, const agents::PlanRequest& request);
HitlPhaseOutcome hitl_implement(agents::Proposer& proposer,
                                const agents::ImplementRequest& request);
// Lowers for TPU; an error becomes an MK310 finding on the line the worker names.
HitlPhaseOutcome hitl_validate(const HitlHostJob& job);
// Lower + evaluate + score; an MK311 verdict and a run node.
HitlPhaseOutcome hitl_test(const HitlHostJob& job);
// The current code and a few one-parameter moves; the best correct move when it beats it.
HitlPhaseOutcome hitl_autotune(const HitlHostJob& job);
// Profiles the code and diagnoses it (service kernel_checks); the report (for plan.md) has the
// profile, the diagnosis's full summary and the suggested next step with its reason.
HitlPhaseOutcome hitl_profile(const HitlHostJob& job);

}  // namespace mk::service
