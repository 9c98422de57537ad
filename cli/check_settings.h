// What `maxkernel check` reports: the target generation and the codes chosen, from
// `[tool.maxkernel]` in the nearest pyproject.toml, overridden by the command line.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mk::cli {

struct CheckSettings {
  std::optional<std::string> target;
  std::optional<std::vector<std::string>> select;  // code prefixes: "MK001", "MK00", "MK"
  std::optional<std::vector<std::string>> ignore;

  // Fields set in `over` replace these; its select or ignore replaces both of these.
  void override_with(const CheckSettings& over);
  // Whether `code` is selected and not ignored (an ignore wins over a select).
  bool reports(const std::string& code) const;
};

// The nearest pyproject.toml at or above `start` (a folder) that has a [tool.maxkernel] table.
std::optional<std::filesystem::path> find_pyproject(const std::filesystem::path& start);

// Reads [tool.maxkernel] (keys target, select, ignore). False with `error` naming the file and
// the key or line when the table holds something else.
bool read_pyproject_settings(const std::filesystem::path& pyproject, CheckSettings& out,
                             std::string& error);

// "MK001,MK002" as a list; false with `error` when an entry is not a prefix of a known code.
bool parse_code_list(const std::string& text, std::vector<std::string>& out, std::string& error);

}  // namespace mk::cli
