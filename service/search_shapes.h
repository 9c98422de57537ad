// The extra input shapes of a search run (docs/optimize.md "Extra shapes"), wired once for every
// front end: proposed on the run's first session from the kernel's lowering (the rules) and the
// Tester (with an LLM), kept in the run's params so a resumed run checks the same set, and
// settled by the root's evaluation (the shapes the kernel as written passes).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/candidate_evaluator.h"
#include "agents/orchestration/expander.h"
#include "agents/orchestration/expander_factory.h"
#include "agents/orchestration/run_store.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

// The run's set: from its params once proposed (or the root's record once settled), else
// proposed now and stored. nullopt for a run that asked for none (or predates extra shapes).
// `kernel_code` is the kernel the rules read (the root, or the first kernel written from a
// reference; "" when there is none). Store failures propagate; LLM and worker trouble become
// notes in the set.
std::optional<agents::ExtraShapes> run_extra_shapes(
    agents::RunStore& runs, const std::string& run_id, tpu::KernelJobs& jobs,
    const agents::EvaluationSetup& evaluation, const std::string& kernel_code,
    const agents::ExpanderSetup& llm, const std::function<bool()>& cancelled);

// The set a finished (or stopped) run checked, in words: "extra shapes: ragged (512 -> 384)"
// and its notes; "" for a run without extra shapes.
std::string extra_shapes_summary(const agents::RunRecord& run,
                                 const std::vector<agents::NodeRecord>& nodes);
// The same as JSON (null for a run without extra shapes).
nlohmann::json extra_shapes_json(const agents::RunRecord& run,
                                 const std::vector<agents::NodeRecord>& nodes);

}  // namespace mk::service
