#include "agents/report/line_diff.h"

#include <algorithm>
#include <cstdint>

namespace mk::report {

namespace {

// Above this many LCS table cells (after trimming the common prefix and suffix) the middle part
// is shown as one replacement: a report must render quickly even for huge generated files.
constexpr size_t kMaxTableCells = 16u * 1024u * 1024u;

struct Edit {
  DiffLine::Kind kind;
  size_t old_index;  // index into the old lines (Context/Removed)
  size_t new_index;  // index into the new lines (Context/Added)
};

// The full edit script: context, removals and additions in file order.
std::vector<Edit> edit_script(const std::vector<std::string>& a,
                              const std::vector<std::string>& b) {
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;

  std::vector<Edit> script;
  for (size_t i = 0; i < prefix; ++i) script.push_back({DiffLine::Kind::Context, i, i});

  const size_t n = a.size() - prefix - suffix;
  const size_t m = b.size() - prefix - suffix;
  if (n > 0 && m > 0 && (n + 1) * (m + 1) <= kMaxTableCells) {
    // lcs[i][j] = length of the LCS of a[prefix+i..] and b[prefix+j..].
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        at(i, j) = a[prefix + i] == b[prefix + j] ? at(i + 1, j + 1) + 1
                                                  : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[prefix + i] == b[prefix + j]) {
        script.push_back({DiffLine::Kind::Context, prefix + i, prefix + j});
        ++i;
        ++j;
      } else if (j == m || (i < n && at(i + 1, j) >= at(i, j + 1))) {
        // On a tie the removal goes first, so a changed line reads "-old" then "+new".
        script.push_back({DiffLine::Kind::Removed, prefix + i, prefix + j});
        ++i;
      } else {
        script.push_back({DiffLine::Kind::Added, prefix + i, prefix + j});
        ++j;
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i) script.push_back({DiffLine::Kind::Removed, prefix + i, prefix});
    for (size_t j = 0; j < m; ++j)
      script.push_back({DiffLine::Kind::Added, prefix + n, prefix + j});
  }
  for (size_t k = 0; k < suffix; ++k)
    script.push_back({DiffLine::Kind::Context, prefix + n + k, prefix + m + k});
  return script;
}

}  // namespace

std::string DiffHunk::header() const {
  auto range = [](int start, int count) {
    return count == 1 ? std::to_string(start) : std::to_string(start) + "," + std::to_string(count);
  };
  return "@@ -" + range(old_start, old_count) + " +" + range(new_start, new_count) + " @@";
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    start = end + 1;
  }
  return lines;
}

std::vector<DiffHunk> unified_diff(std::string_view before, std::string_view after, int context) {
  const std::vector<std::string> a = split_lines(before);
  const std::vector<std::string> b = split_lines(after);
  const std::vector<Edit> script = edit_script(a, b);
  const size_t ctx = static_cast<size_t>(std::max(context, 0));

  std::vector<DiffHunk> hunks;
  size_t k = 0;
  while (k < script.size()) {
    // Find the next change.
    while (k < script.size() && script[k].kind == DiffLine::Kind::Context) ++k;
    if (k == script.size()) break;
    const size_t begin = k >= ctx ? k - ctx : 0;
    // Extend while the gap of context between changes is at most 2 * ctx.
    size_t end = k;
    while (end < script.size()) {
      if (script[end].kind != DiffLine::Kind::Context) {
        ++end;
        continue;
      }
      size_t run = end;
      while (run < script.size() && script[run].kind == DiffLine::Kind::Context) ++run;
      if (run == script.size() || run - end > 2 * ctx) {
        end = std::min(run, end + ctx);
        break;
      }
      end = run;
    }
    DiffHunk hunk;
    for (size_t e = begin; e < end; ++e) {
      const Edit& edit = script[e];
      if (edit.kind != DiffLine::Kind::Added) {
        if (hunk.old_count == 0) hunk.old_start = static_cast<int>(edit.old_index) + 1;
        ++hunk.old_count;
      }
      if (edit.kind != DiffLine::Kind::Removed) {
        if (hunk.new_count == 0) hunk.new_start = static_cast<int>(edit.new_index) + 1;
        ++hunk.new_count;
      }
      const std::string& text =
          edit.kind == DiffLine::Kind::Added ? b[edit.new_index] : a[edit.old_index];
      hunk.lines.push_back({edit.kind, text});
    }
    // An empty side starts at the line before the hunk, as diff -u writes it.
    if (hunk.old_count == 0) hunk.old_start = static_cast<int>(script[begin].old_index);
    if (hunk.new_count == 0) hunk.new_start = static_cast<int>(script[begin].new_index);
    hunks.push_back(std::move(hunk));
    k = end;
  }
  return hunks;
}

std::string format_unified_diff(const std::vector<DiffHunk>& hunks, std::string_view from_name,
                                std::string_view to_name) {
  std::string out;
  if (hunks.empty()) return out;
  out.append("--- ").append(from_name).append("\n+++ ").append(to_name).append("\n");
  for (const DiffHunk& hunk : hunks) {
    out.append(hunk.header()).append("\n");
    for (const DiffLine& line : hunk.lines) {
      out.push_back(line.kind == DiffLine::Kind::Added     ? '+'
                    : line.kind == DiffLine::Kind::Removed ? '-'
                                                           : ' ');
      out.append(line.text).append("\n");
    }
  }
  return out;
}

}  // namespace mk::report
