// A recorded search run for the report tests: six nodes (baseline, correct children, an
// incorrect, a failed and a pending node), LLM cost on some, and planted <script> text in a
// plan, an error and code. Written through the real RunStore into a real SQLite file.
#pragma once

#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"

namespace mk::report::testing {

inline constexpr const char* kPlanted = "<script>alert(1)</script>";

// The baseline kernel and the line each child changes.
std::string baseline_code();

// The run and nodes before they are stored (ids are 0..5 in order; parents refer to them).
agents::RunRecord demo_run_record();
std::vector<agents::NodeRecord> demo_nodes(int64_t start_time);

// Stores the run and its nodes; returns the run id.
std::string write_demo_run(agents::RunStore& store);

}  // namespace mk::report::testing
