#include "source/text/line_diff.h"

#include <algorithm>
#include <cstdint>

namespace mk::text {

namespace {

// Beyond this many cells the alignment table would cost more than the shorter preview is worth.
constexpr size_t kMaxAlignCells = size_t{1} << 22;

// Each line as a view into `text`, ending after its "\n" (the last may lack one).
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

// Byte offset of each line start, plus the end of the text.
std::vector<size_t> line_offsets(const std::vector<std::string_view>& lines) {
  std::vector<size_t> at{0};
  for (std::string_view l : lines) at.push_back(at.back() + l.size());
  return at;
}

}  // namespace

std::vector<LineReplacement> line_diff(std::string_view before, std::string_view after) {
  const std::vector<std::string_view> a = split_lines(before);
  const std::vector<std::string_view> b = split_lines(after);
  const std::vector<size_t> a_at = line_offsets(a);
  const std::vector<size_t> b_at = line_offsets(b);

  size_t head = 0;  // equal lines at the start
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;  // equal lines at the end, not overlapping the head
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  const size_t n = a.size() - head - tail;
  const size_t m = b.size() - head - tail;
  if (n == 0 && m == 0) return {};

  std::vector<LineReplacement> out;
  // Appends the replacement of old lines [i0, i1) by new lines [j0, j1) (indices into a, b).
  auto hunk = [&](size_t i0, size_t i1, size_t j0, size_t j1) {
    if (i0 == i1 && j0 == j1) return;
    out.push_back({a_at[i0], a_at[i1], std::string(after.substr(b_at[j0], b_at[j1] - b_at[j0]))});
  };
  if (n == 0 || m == 0 || (n + 1) * (m + 1) > kMaxAlignCells) {
    hunk(head, head + n, head, head + m);
    return out;
  }

  // lcs[i][j]: the longest common subsequence of the middle's old lines i.. and new lines j..
  const size_t w = m + 1;
  std::vector<uint32_t> lcs((n + 1) * w, 0);
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i * w + j] = a[head + i] == b[head + j]
                           ? lcs[(i + 1) * w + j + 1] + 1
                           : std::max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  // Walk the table: runs of unmatched lines between matches become one replacement each.
  size_t i = 0, j = 0, i0 = 0, j0 = 0;
  while (i < n && j < m) {
    if (a[head + i] == b[head + j]) {
      hunk(head + i0, head + i, head + j0, head + j);
      ++i, ++j;
      i0 = i, j0 = j;
    } else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
  hunk(head + i0, head + n, head + j0, head + m);
  return out;
}

}  // namespace mk::text
