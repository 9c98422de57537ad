// The budget a search has when its front end is given none, written once for the CLI's optimize,
// bench --optimize and the editor's Auto / graph-search runs (docs/optimize.md, docs/bench.md).
// The fronts differ on purpose: an editor's Auto run stops sooner than a CLI one, and a bench
// spends its budget once per task.
#pragma once

#include <string>

#include "agents/orchestration/search_params.h"

namespace mk::service {

enum class BudgetFront {
  Optimize,  // maxkernel optimize: Auto 8 rounds (patience 3), a graph search 3 rounds
  Bench,     // maxkernel bench --optimize, per task: 3 rounds (patience 2), either mode
  Editor,    // the server's runs: Auto 6 rounds (patience 3), a graph search 3 rounds
};

// `mode` is "auto" or the graph-search mode.
agents::Budget default_budget(BudgetFront front, const std::string& mode);

}  // namespace mk::service
