// Lessons from runs: after a run, each improving step on the way to the best node becomes a
// lesson (kernel class, strategy, measured or predicted effect, target) in the knowledge store;
// later runs on kernels of the same class get them back as context for the planner.
#pragma once

#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"
#include "knowledge/store.h"
#include "source/pallas/kernel_model.h"

namespace mk::agents {

// "matmul", "reduction", ... from what the source model knows about the kernel.
std::string kernel_class_of(const pallas::Kernel& kernel, const std::string& file_stem);

// Records one lesson per step on the path root -> best whose effect is known; returns how many.
int record_run_lessons(knowledge::Store& store, const RunRecord& run,
                       const std::vector<NodeRecord>& nodes, const std::string& kernel_class);

// The best lessons for the class on the target, as short passages for an agent's context.
std::vector<std::string> lesson_passages(knowledge::Store& store, const std::string& kernel_class,
                                         const std::string& target, int limit);

}  // namespace mk::agents
