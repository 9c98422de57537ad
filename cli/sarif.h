// SARIF 2.1.0 output for `maxkernel check --format sarif`.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "cli/source_file.h"

namespace mk::cli {

nlohmann::json to_sarif(const std::vector<AnalysedFile>& files, const std::string& target);

}  // namespace mk::cli
