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

// A wrong result the debugger fixed, as a lesson: the pattern of the worker's correctness report
// (`failure`: the text the debugger was sent) and the lines the fix changed. Effect 1 (it is a
// fix, not a speedup); notes "correctness fix". Returns the strategy text it stored.
std::string record_debug_lesson(knowledge::Store& store, const std::string& kernel_class,
                                const std::string& target, const std::string& failure,
                                const std::string& fix);

// The pattern lines of a correctness report text ("pattern (blocks): ..."), kinds and details
// shortened, joined: what a lesson says was wrong.
std::string mismatch_pattern_summary(const std::string& failure);

// The best lessons for the class on the target, as short passages for an agent's context.
std::vector<std::string> lesson_passages(knowledge::Store& store, const std::string& kernel_class,
                                         const std::string& target, int limit);

}  // namespace mk::agents
