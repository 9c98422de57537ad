// The smallest set of line replacements that turns one text into another: what a proposed edit
// sends, so an editor's preview shows only the lines that change.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mk::text {

// Replace the bytes [start, end) of the old text with `new_text`. Both ends sit on line starts
// (or the end of the text), so each replacement covers whole lines.
struct LineReplacement {
  size_t start = 0;
  size_t end = 0;
  std::string new_text;
};

// Replacements in ascending, non-overlapping order; applied to `before` they give exactly
// `after`; none when the texts are equal. A line is its bytes up to and including its "\n", so
// "\r\n" and "\n" endings differ and a CRLF line that becomes LF is a changed line.
// The middle that differs is aligned by a longest common subsequence of lines; when it is too
// large to align cheaply, it becomes one replacement.
std::vector<LineReplacement> line_diff(std::string_view before, std::string_view after);

}  // namespace mk::text
