// `maxkernel optimize` (Auto or graph search on one kernel) and `maxkernel runs` (list, show,
// resume): the product's main job without an editor.
#pragma once

#include <string>
#include <vector>

namespace mk::cli {

int run_optimize(const std::vector<std::string>& args);
int run_runs(const std::vector<std::string>& args);

}  // namespace mk::cli
