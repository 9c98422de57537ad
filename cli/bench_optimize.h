// `maxkernel bench SUITE_DIR --optimize`: runs the agent on every task of a suite, each from its
// plain JAX reference (XLA scores 1.0), and prints the papers' table: compiled, correct, speedup
// vs XLA, geometric mean, fast_p, and the cost of each task (evaluations, host seconds, LLM
// tokens and USD).
#pragma once

#include <string>
#include <vector>

namespace mk::cli {

int run_bench_optimize(const std::vector<std::string>& args);

}  // namespace mk::cli
