// SARIF 2.1.0 output for `maxkernel check --format sarif`, shaped for GitHub code scanning:
// artifact URIs relative to %SRCROOT% (percent-encoded), https help links, rule help, invocations.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/source_file.h"

namespace mk::cli {

struct SarifRun {
  std::string target;                  // the TPU generation checked against
  std::filesystem::path root;          // %SRCROOT%: artifact URIs are relative to it
  std::vector<std::string> arguments;  // check's own arguments, for the invocation
  std::vector<std::string> errors;     // paths that could not be read (invocation notifications)
};

// The enclosing git work tree of the current folder (a .git folder or file above it), else the
// current folder: where code scanning's checkout is, so results map onto the repository.
std::filesystem::path default_sarif_root();

// `path` as a URI reference relative to `root` when it lies under it (percent-encoded segments),
// else nullopt.
std::optional<std::string> relative_uri(const std::filesystem::path& path,
                                        const std::filesystem::path& root);
// An absolute path as a file:// URI, percent-encoded.
std::string file_uri(const std::filesystem::path& absolute, bool folder = false);

nlohmann::json to_sarif(const std::vector<AnalysedFile>& files, const SarifRun& run);

}  // namespace mk::cli
