// A line diff between two versions of a kernel file (LCS over lines), grouped into unified-diff
// hunks with context. Used by the run report to show what each search step changed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mk::report {

struct DiffLine {
  enum class Kind { Context, Added, Removed };
  Kind kind = Kind::Context;
  std::string text;  // without the line break
};

struct DiffHunk {
  int old_start = 0;  // 1-based first line in the old text (0 when old_count is 0)
  int old_count = 0;
  int new_start = 0;
  int new_count = 0;
  std::vector<DiffLine> lines;
  std::string header() const;  // "@@ -3,7 +3,8 @@"
};

// Splits on '\n' (a trailing '\r' is dropped); a final line without a break still counts.
std::vector<std::string> split_lines(std::string_view text);

// Hunks that turn `before` into `after`, each with up to `context` unchanged lines around the
// changes. Empty when the texts have the same lines. Inputs whose changed middle part is too big
// for the quadratic LCS table are shown as one replacement hunk instead of failing.
std::vector<DiffHunk> unified_diff(std::string_view before, std::string_view after,
                                   int context = 3);

// The classic text form ("--- a", "+++ b", hunks), for logs and tests.
std::string format_unified_diff(const std::vector<DiffHunk>& hunks, std::string_view from_name,
                                std::string_view to_name);

}  // namespace mk::report
