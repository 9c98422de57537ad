// `maxkernel report RUN_ID | --latest [-o FILE] [--store PATH]`: writes a run's HTML report.
#pragma once

#include <string>
#include <vector>

namespace mk::cli {

int run_report(const std::vector<std::string>& args);

}  // namespace mk::cli
