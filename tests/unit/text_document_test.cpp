// TextDocument::apply_change against plain std::string edits and an independent reference.
#include "source/text/text_document.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/utf8_samples.h"

namespace mk::text {
namespace {

using samples::kE;
using samples::kSmile;
using samples::kSun;

// ----- reference implementation, written without LineIndex ------------------------------------

// Byte offsets where LSP lines start ("\n", "\r\n" and a lone "\r" all end a line).
std::vector<size_t> ref_line_starts(const std::string& s) {
  std::vector<size_t> starts{0};
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
      i += 2;
      starts.push_back(i);
    } else if (s[i] == '\r' || s[i] == '\n') {
      ++i;
      starts.push_back(i);
    } else {
      ++i;
    }
  }
  return starts;
}

// Byte length and UTF-16 units of the (valid) UTF-8 sequence at s[i]; the tests only build valid
// text.
std::pair<size_t, uint32_t> ref_code_point(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c >= 0xF0) return {4, 2};
  if (c >= 0xE0) return {3, 1};
  if (c >= 0xC0) return {2, 1};
  return {1, 1};
}

size_t ref_offset(const std::string& s, Utf16Position p) {
  const std::vector<size_t> starts = ref_line_starts(s);
  if (p.line >= starts.size()) return s.size();
  size_t end = p.line + 1 < starts.size() ? starts[p.line + 1] : s.size();
  // Strip this line's terminator.
  if (p.line + 1 < starts.size()) {
    if (end >= 2 && s[end - 2] == '\r' && s[end - 1] == '\n') {
      end -= 2;
    } else {
      end -= 1;
    }
  }
  size_t i = starts[p.line];
  uint32_t units = 0;
  while (i < end) {
    auto [bytes, u] = ref_code_point(s, i);
    if (units + u > p.character) break;  // a position inside a surrogate pair rounds down
    units += u;
    i += bytes;
  }
  return i;
}

// Tree-sitter point: rows separated by '\n' only, columns in bytes.
BytePoint ref_point(const std::string& s, size_t offset) {
  BytePoint p;
  size_t row_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (s[i] == '\n') {
      ++p.row;
      row_start = i + 1;
    }
  }
  p.column = static_cast<uint32_t>(offset - row_start);
  return p;
}

void expect_point(const BytePoint& actual, const BytePoint& expected, const char* what) {
  EXPECT_EQ(actual.row, expected.row) << what;
  EXPECT_EQ(actual.column, expected.column) << what;
}

// ----- fixed cases ----------------------------------------------------------------------------

TEST(TextDocument, KeepsUriVersionAndText) {
  TextDocument doc("file:///a.py", 3, "x = 1\n");
  EXPECT_EQ(doc.uri(), "file:///a.py");
  EXPECT_EQ(doc.version(), 3);
  doc.set_version(4);
  EXPECT_EQ(doc.version(), 4);
  EXPECT_EQ(doc.text(), "x = 1\n");
  EXPECT_EQ(doc.lines().line_count(), 2u);
}

TEST(TextDocument, InsertInMiddleOfLine) {
  TextDocument doc("u", 1, "abc\ndef\n");
  const ByteEdit e = doc.apply_change({{1, 1}, {1, 1}}, "XY");
  EXPECT_EQ(doc.text(), "abc\ndXYef\n");
  EXPECT_EQ(e.start_byte, 5u);
  EXPECT_EQ(e.old_end_byte, 5u);
  EXPECT_EQ(e.new_end_byte, 7u);
  expect_point(e.start_point, {1, 1}, "start");
  expect_point(e.old_end_point, {1, 1}, "old end");
  expect_point(e.new_end_point, {1, 3}, "new end");
  EXPECT_EQ(doc.position_of(7), (Utf16Position{1, 3}));
}

TEST(TextDocument, DeleteAcrossLines) {
  TextDocument doc("u", 1, "abc\ndef\nghi");
  const ByteEdit e = doc.apply_change({{0, 2}, {2, 1}}, "");
  EXPECT_EQ(doc.text(), "abhi");
  EXPECT_EQ(e.start_byte, 2u);
  EXPECT_EQ(e.old_end_byte, 9u);
  EXPECT_EQ(e.new_end_byte, 2u);
  expect_point(e.old_end_point, {2, 1}, "old end");
  expect_point(e.new_end_point, {0, 2}, "new end");
  EXPECT_EQ(doc.lines().line_count(), 1u);
}

TEST(TextDocument, ReplaceAcrossLinesWithMultilineText) {
  TextDocument doc("u", 1, "def f():\n    return 1\n");
  const ByteEdit e = doc.apply_change({{0, 4}, {1, 11}}, "g(x):\n    y = x\n    return y");
  EXPECT_EQ(doc.text(), "def g(x):\n    y = x\n    return y1\n");
  EXPECT_EQ(e.start_byte, 4u);
  EXPECT_EQ(e.old_end_byte, 20u);
  EXPECT_EQ(e.new_end_byte, 4u + 28u);
  expect_point(e.new_end_point, {2, 12}, "new end");
  EXPECT_EQ(doc.lines().line_count(), 4u);
}

TEST(TextDocument, CrlfEditsKeepLinesConsistent) {
  TextDocument doc("u", 1, "a = 1\r\nb = 2\r\n");
  // Past-the-end character on a CRLF line clamps before the "\r".
  ByteEdit e = doc.apply_change({{0, 50}, {0, 50}}, "  # one");
  EXPECT_EQ(doc.text(), "a = 1  # one\r\nb = 2\r\n");
  EXPECT_EQ(e.start_byte, 5u);
  // Joining the two lines removes the whole CRLF.
  e = doc.apply_change({{0, 12}, {1, 0}}, "; ");
  EXPECT_EQ(doc.text(), "a = 1  # one; b = 2\r\n");
  EXPECT_EQ(e.old_end_byte, 14u);
  expect_point(e.old_end_point, {1, 0}, "old end");
  EXPECT_EQ(doc.lines().line_count(), 2u);
  // Inserting a lone "\r" then a "\n" right after it forms a single CRLF terminator.
  doc.apply_change({{0, 5}, {0, 5}}, "\r");
  EXPECT_EQ(doc.lines().line_count(), 3u);
  doc.apply_change({{1, 0}, {1, 0}}, "\n");
  EXPECT_EQ(doc.text(), "a = 1\r\n  # one; b = 2\r\n");
  EXPECT_EQ(doc.lines().line_count(), 3u);
  EXPECT_EQ(doc.offset_of({1, 0}), 7u);
}

TEST(TextDocument, EmojiPositionsUseUtf16Units) {
  TextDocument doc("u", 1, "s = '" + kSmile + kSun + "'\n");
  // Replace 日 (characters 7..8, after the 2-unit emoji at 5..7).
  ByteEdit e = doc.apply_change({{0, 7}, {0, 8}}, kE);
  EXPECT_EQ(doc.text(), "s = '" + kSmile + kE + "'\n");
  EXPECT_EQ(e.start_byte, 9u);
  EXPECT_EQ(e.old_end_byte, 12u);
  EXPECT_EQ(e.new_end_byte, 11u);
  expect_point(e.new_end_point, {0, 11}, "new end");
  // A range that starts inside the surrogate pair starts at the emoji itself.
  e = doc.apply_change({{0, 6}, {0, 7}}, "");
  EXPECT_EQ(doc.text(), "s = '" + kE + "'\n");
  EXPECT_EQ(e.start_byte, 5u);
  EXPECT_EQ(e.old_end_byte, 9u);
}

TEST(TextDocument, ReversedRangeIsTreatedAsForward) {
  TextDocument doc("u", 1, "0123456789");
  const ByteEdit e = doc.apply_change({{0, 7}, {0, 3}}, "-");
  EXPECT_EQ(doc.text(), "012-789");
  EXPECT_EQ(e.start_byte, 3u);
  EXPECT_EQ(e.old_end_byte, 7u);
}

TEST(TextDocument, RangePastEndAppends) {
  TextDocument doc("u", 1, "x = 1");
  const ByteEdit e = doc.apply_change({{5, 0}, {9, 9}}, "\ny = 2");
  EXPECT_EQ(doc.text(), "x = 1\ny = 2");
  EXPECT_EQ(e.start_byte, 5u);
  expect_point(e.new_end_point, {1, 5}, "new end");
}

TEST(TextDocument, ReplaceAllRebuildsLineIndex) {
  TextDocument doc("u", 1, "one line");
  doc.replace_all("a\nb\r\nc\rd");
  EXPECT_EQ(doc.lines().line_count(), 4u);
  EXPECT_EQ(doc.offset_of({3, 1}), 8u);
}

// ----- randomized comparison with the reference -----------------------------------------------

TEST(TextDocument, RandomEditsMatchReferenceImplementation) {
  const std::vector<std::string> pieces = {"a",  "b",    "x = 1", " ", kE,  kSun, kSmile,
                                           "\n", "\r\n", "\r",    "(", ")", "#"};
  std::mt19937 rng(20240607);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto random_text = [&](size_t max_pieces) {
    std::string s;
    const size_t n = pick(max_pieces + 1);
    for (size_t i = 0; i < n; ++i) s += pieces[pick(pieces.size())];
    return s;
  };

  std::string reference = "def f(" + kE + "):\r\n    return '" + kSmile + kSun + "'\n\rz";
  TextDocument doc("u", 1, reference);
  uint32_t max_lines = 0;
  for (int step = 0; step < 500; ++step) {
    const auto lines = static_cast<uint32_t>(ref_line_starts(reference).size());
    max_lines = std::max(max_lines, lines);
    auto random_position = [&]() {
      return Utf16Position{static_cast<uint32_t>(pick(lines + 2)), static_cast<uint32_t>(pick(14))};
    };
    // Mostly short ranges (so the text grows), sometimes one across many lines.
    const Utf16Position from = random_position();
    const Utf16Position to = pick(4) == 0
                                 ? random_position()
                                 : Utf16Position{from.line + static_cast<uint32_t>(pick(2)),
                                                 static_cast<uint32_t>(pick(14))};
    const Utf16Range range{from, to};
    const std::string insert = random_text(5);

    size_t start = ref_offset(reference, range.start);
    size_t end = ref_offset(reference, range.end);
    if (end < start) std::swap(start, end);
    const BytePoint start_point = ref_point(reference, start);
    const BytePoint old_end_point = ref_point(reference, end);
    reference.replace(start, end - start, insert);

    const ByteEdit e = doc.apply_change(range, insert);
    ASSERT_EQ(doc.text(), reference) << "step " << step;
    ASSERT_EQ(e.start_byte, start) << "step " << step;
    ASSERT_EQ(e.old_end_byte, end) << "step " << step;
    ASSERT_EQ(e.new_end_byte, start + insert.size()) << "step " << step;
    const BytePoint new_end_point = ref_point(reference, start + insert.size());
    ASSERT_EQ(e.start_point.row, start_point.row) << "step " << step;
    ASSERT_EQ(e.start_point.column, start_point.column) << "step " << step;
    ASSERT_EQ(e.old_end_point.row, old_end_point.row) << "step " << step;
    ASSERT_EQ(e.old_end_point.column, old_end_point.column) << "step " << step;
    ASSERT_EQ(e.new_end_point.row, new_end_point.row) << "step " << step;
    ASSERT_EQ(e.new_end_point.column, new_end_point.column) << "step " << step;

    // The rebuilt line index agrees with the reference on fresh random positions.
    ASSERT_EQ(doc.lines().line_count(), ref_line_starts(reference).size()) << "step " << step;
    for (int probe = 0; probe < 4; ++probe) {
      const Utf16Position p = random_position();
      ASSERT_EQ(doc.offset_of(p), ref_offset(reference, p))
          << "step " << step << " position " << p.line << ":" << p.character;
    }
  }
  EXPECT_GE(max_lines, 10u);  // the walk really exercised multi-line text
}

}  // namespace
}  // namespace mk::text
