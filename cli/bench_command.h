// `maxkernel bench SUITE_DIR`: evaluates every task of a JAXBench-format suite on a host and
// prints compile / correctness rates, speedups vs XLA, their geometric mean and fast_p.
#pragma once

#include <string>
#include <vector>

namespace mk::cli {

int run_bench(const std::vector<std::string>& args);

}  // namespace mk::cli
