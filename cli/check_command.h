// `maxkernel check`: static analysis of files or folders, as text, JSON or SARIF.
#pragma once

#include <string>
#include <vector>

namespace mk::cli {

int run_check(const std::vector<std::string>& args);

}  // namespace mk::cli
