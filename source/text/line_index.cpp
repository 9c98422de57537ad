#include "source/text/line_index.h"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mk::text {
namespace {

// Length in bytes and UTF-16 units of the UTF-8 sequence starting at utf8[i].
struct CodePoint {
  size_t bytes;
  uint32_t units;
};

CodePoint decode_at(std::string_view utf8, size_t i) {
  const auto lead = static_cast<unsigned char>(utf8[i]);
  size_t need = 0;
  if (lead < 0x80) return {1, 1};
  if ((lead & 0xE0) == 0xC0) {
    need = 2;
  } else if ((lead & 0xF0) == 0xE0) {
    need = 3;
  } else if ((lead & 0xF8) == 0xF0) {
    need = 4;
  } else {
    return {1, 1};  // stray continuation or invalid lead byte
  }
  if (i + need > utf8.size()) return {1, 1};
  for (size_t k = 1; k < need; ++k) {
    if ((static_cast<unsigned char>(utf8[i + k]) & 0xC0) != 0x80) return {1, 1};
  }
  return {need, need == 4 ? 2u : 1u};
}

// The first '\n' or '\r' of `text` at or after `at`, or text.size(). Sixteen bytes at a time
// where SSE2 is there: a file's first open indexes all of it before its first diagnostics.
size_t next_line_break(std::string_view text, size_t at) {
#if defined(__SSE2__)
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i carriage_return = _mm_set1_epi8('\r');
  for (; at + 16 <= text.size(); at += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + at));
    const int mask = _mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(v, newline), _mm_cmpeq_epi8(v, carriage_return)));
    if (mask) return at + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  while (at < text.size() && text[at] != '\n' && text[at] != '\r') ++at;
  return at;
}

}  // namespace

uint32_t utf16_length(std::string_view utf8) {
  uint32_t units = 0;
  for (size_t i = 0; i < utf8.size();) {
    const CodePoint cp = decode_at(utf8, i);
    units += cp.units;
    i += cp.bytes;
  }
  return units;
}

size_t utf8_prefix_for_utf16(std::string_view utf8, uint32_t units) {
  size_t i = 0;
  uint32_t seen = 0;
  while (i < utf8.size()) {
    const CodePoint cp = decode_at(utf8, i);
    // A position inside a surrogate pair rounds down to the code point's start.
    if (seen + cp.units > units) break;
    seen += cp.units;
    i += cp.bytes;
  }
  return i;
}

LineIndex::LineIndex(std::string_view text) {
  line_starts_.push_back(0);
  for (size_t i = next_line_break(text, 0); i < text.size(); i = next_line_break(text, i + 1)) {
    if (text[i] == '\n') {
      newline_offsets_.push_back(i);
    } else if (i + 1 < text.size() && text[i + 1] == '\n') {  // "\r\n" ends one line
      newline_offsets_.push_back(++i);
    }
    line_starts_.push_back(i + 1);
  }
}

void LineIndex::apply_edit(std::string_view text, size_t start, size_t old_end, size_t new_end) {
  // Whether a byte ends a line depends only on it and the byte after it, so the bytes whose
  // verdict can change are [first, new_end): the edited ones and the one before them.
  const size_t first = start > 0 ? start - 1 : 0;
  std::vector<size_t> starts, newlines;
  for (size_t i = first; i < new_end && i < text.size(); ++i) {
    if (text[i] == '\n') {
      newlines.push_back(i);
      starts.push_back(i + 1);
    } else if (text[i] == '\r' && !(i + 1 < text.size() && text[i + 1] == '\n')) {
      starts.push_back(i + 1);
    }
  }
  // Before the edit those bytes were [first, old_end): they produced line starts in
  // [first + 1, old_end] and newline offsets in [first, old_end).
  auto splice = [&](std::vector<size_t>& values, size_t lo, size_t hi,
                    const std::vector<size_t>& fresh) {
    auto from = std::lower_bound(values.begin(), values.end(), lo);
    auto to = std::upper_bound(from, values.end(), hi);
    for (auto it = to; it != values.end(); ++it) *it = *it - old_end + new_end;
    from = values.erase(from, to);
    values.insert(from, fresh.begin(), fresh.end());
  };
  splice(line_starts_, first + 1, old_end, starts);
  if (old_end > first) {
    splice(newline_offsets_, first, old_end - 1, newlines);
  } else {  // nothing removed; shift what follows and insert
    auto from = std::lower_bound(newline_offsets_.begin(), newline_offsets_.end(), first);
    for (auto it = from; it != newline_offsets_.end(); ++it) *it = *it - old_end + new_end;
    newline_offsets_.insert(from, newlines.begin(), newlines.end());
  }
}

size_t LineIndex::line_content_end(std::string_view text, uint32_t line) const {
  size_t end = line + 1 < line_starts_.size() ? line_starts_[line + 1] : text.size();
  if (end > line_starts_[line] && line + 1 < line_starts_.size()) {
    --end;  // the terminator's last byte
    if (text[end] == '\n' && end > line_starts_[line] && text[end - 1] == '\r') --end;
  }
  return end;
}

uint32_t LineIndex::line_of_offset(size_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<uint32_t>(std::distance(line_starts_.begin(), it) - 1);
}

size_t LineIndex::offset_of(std::string_view text, Utf16Position position) const {
  if (position.line >= line_starts_.size()) return text.size();
  const size_t start = line_starts_[position.line];
  const size_t end = line_content_end(text, position.line);
  return start + utf8_prefix_for_utf16(text.substr(start, end - start), position.character);
}

Utf16Position LineIndex::position_of(std::string_view text, size_t offset) const {
  offset = std::min(offset, text.size());
  const uint32_t line = line_of_offset(offset);
  const size_t start = line_starts_[line];
  const size_t end = std::min(offset, line_content_end(text, line));
  return {line, utf16_length(text.substr(start, end - start))};
}

BytePoint LineIndex::point_of(std::string_view text, size_t offset) const {
  offset = std::min(offset, text.size());
  auto it = std::lower_bound(newline_offsets_.begin(), newline_offsets_.end(), offset);
  const auto row = static_cast<uint32_t>(std::distance(newline_offsets_.begin(), it));
  const size_t row_start = row == 0 ? 0 : newline_offsets_[row - 1] + 1;
  return {row, static_cast<uint32_t>(offset - row_start)};
}

}  // namespace mk::text
