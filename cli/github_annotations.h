// `maxkernel check --format github`: one GitHub Actions workflow command per finding
// (`::error file=...,line=...::message`), which the run's summary and the pull request's diff show.
#pragma once

#include <string>

#include "cli/source_file.h"

namespace mk::cli {

std::string github_annotation(const AnalysedFile& file, const analysis::Finding& finding);

}  // namespace mk::cli
