// Maps between byte offsets in UTF-8 text, LSP positions (UTF-16 code units) and tree-sitter
// points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mk::text {

// An LSP position: zero-based line and UTF-16 code unit offset within the line.
struct Utf16Position {
  uint32_t line = 0;
  uint32_t character = 0;
  friend bool operator==(const Utf16Position&, const Utf16Position&) = default;
};

struct Utf16Range {
  Utf16Position start;
  Utf16Position end;
  friend bool operator==(const Utf16Range&, const Utf16Range&) = default;
};

// A tree-sitter point: rows are separated by '\n' only, columns count bytes.
struct BytePoint {
  uint32_t row = 0;
  uint32_t column = 0;
};

// Line starts of a text. LSP lines end at "\n", "\r\n" or a lone "\r".
class LineIndex {
 public:
  LineIndex() : line_starts_{0} {}
  explicit LineIndex(std::string_view text);

  // Updates the index after bytes [start, old_end) of the text were replaced with bytes
  // [start, new_end) of `text` (the text after the edit). Rescans only the edited bytes and the
  // one before them (a "\r" there may now pair with a "\n"); lines after the edit are shifted.
  void apply_edit(std::string_view text, size_t start, size_t old_end, size_t new_end);

  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }
  size_t line_start(uint32_t line) const { return line_starts_[line]; }
  // End of the line's content, before its terminator.
  size_t line_content_end(std::string_view text, uint32_t line) const;
  uint32_t line_of_offset(size_t offset) const;

  // Positions past the end of a line clamp to its end, lines past the end to the text's end.
  size_t offset_of(std::string_view text, Utf16Position position) const;
  Utf16Position position_of(std::string_view text, size_t offset) const;
  BytePoint point_of(std::string_view text, size_t offset) const;

 private:
  std::vector<size_t> line_starts_;
  std::vector<size_t> newline_offsets_;  // '\n' bytes, for tree-sitter rows
};

// Number of UTF-16 code units in a UTF-8 string; an invalid byte counts as one unit (U+FFFD).
uint32_t utf16_length(std::string_view utf8);
// Byte length of the longest prefix of `utf8` that spans at most `units` UTF-16 code units.
size_t utf8_prefix_for_utf16(std::string_view utf8, uint32_t units);

}  // namespace mk::text
