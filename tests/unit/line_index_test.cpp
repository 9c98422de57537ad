// LineIndex: byte offsets <-> LSP UTF-16 positions <-> tree-sitter points.
#include "source/text/line_index.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/unit/utf8_samples.h"

namespace mk::text {
namespace {

using samples::kE;
using samples::kSmile;
using samples::kSun;

TEST(Utf16Length, CountsCodeUnitsPerCodePoint) {
  EXPECT_EQ(utf16_length(""), 0u);
  EXPECT_EQ(utf16_length("abc"), 3u);
  EXPECT_EQ(utf16_length(kE), 1u);
  EXPECT_EQ(utf16_length(kSun), 1u);
  EXPECT_EQ(utf16_length(kSmile), 2u);
  EXPECT_EQ(utf16_length("a" + kE + kSun + kSmile + "z"), 6u);
}

TEST(Utf16Length, InvalidBytesCountAsOneUnitEach) {
  EXPECT_EQ(utf16_length("\xFF"), 1u);
  EXPECT_EQ(utf16_length("\x80"), 1u);  // stray continuation byte
  EXPECT_EQ(utf16_length("a\xFF"
                         "b"),
            3u);
  // A truncated 3-byte sequence at the end: each byte is invalid on its own.
  EXPECT_EQ(utf16_length("\xE6\x97"), 2u);
  // A lead byte followed by a non-continuation byte: the lead is one unit, then 'a'.
  EXPECT_EQ(utf16_length("\xE6"
                         "a"),
            2u);
  // A truncated 4-byte sequence.
  EXPECT_EQ(utf16_length("\xF0\x9F\x98"), 3u);
}

TEST(Utf8PrefixForUtf16, StopsOnCodePointBoundaries) {
  const std::string s = "a" + kSmile + "b";  // bytes: 1 + 4 + 1, units: 1 + 2 + 1
  EXPECT_EQ(utf8_prefix_for_utf16(s, 0), 0u);
  EXPECT_EQ(utf8_prefix_for_utf16(s, 1), 1u);
  EXPECT_EQ(utf8_prefix_for_utf16(s, 2), 1u);  // middle of the surrogate pair rounds down
  EXPECT_EQ(utf8_prefix_for_utf16(s, 3), 5u);
  EXPECT_EQ(utf8_prefix_for_utf16(s, 4), 6u);
  EXPECT_EQ(utf8_prefix_for_utf16(s, 100), 6u);
  EXPECT_EQ(utf8_prefix_for_utf16(kE + kSun, 1), 2u);
  EXPECT_EQ(utf8_prefix_for_utf16(kE + kSun, 2), 5u);
  EXPECT_EQ(utf8_prefix_for_utf16("\xFF\xFE"
                                  "c",
                                  2),
            2u);  // invalid bytes: one unit each
}

TEST(LineIndex, EmptyTextHasOneLine) {
  const std::string text;
  LineIndex idx(text);
  EXPECT_EQ(idx.line_count(), 1u);
  EXPECT_EQ(idx.offset_of(text, {0, 0}), 0u);
  EXPECT_EQ(idx.offset_of(text, {3, 7}), 0u);
  EXPECT_EQ(idx.position_of(text, 0), (Utf16Position{0, 0}));
  EXPECT_EQ(idx.position_of(text, 10), (Utf16Position{0, 0}));
  const LineIndex default_index;
  EXPECT_EQ(default_index.line_count(), 1u);
}

TEST(LineIndex, NonAsciiPositionsRoundTrip) {
  // line 0: "é日😀x", line 1: "日"
  const std::string text = kE + kSun + kSmile + "x\n" + kSun;
  LineIndex idx(text);
  ASSERT_EQ(idx.line_count(), 2u);
  EXPECT_EQ(idx.offset_of(text, {0, 0}), 0u);
  EXPECT_EQ(idx.offset_of(text, {0, 1}), 2u);   // after é
  EXPECT_EQ(idx.offset_of(text, {0, 2}), 5u);   // after 日
  EXPECT_EQ(idx.offset_of(text, {0, 3}), 5u);   // inside the surrogate pair: start of 😀
  EXPECT_EQ(idx.offset_of(text, {0, 4}), 9u);   // after 😀
  EXPECT_EQ(idx.offset_of(text, {0, 5}), 10u);  // after x
  EXPECT_EQ(idx.offset_of(text, {1, 0}), 11u);
  EXPECT_EQ(idx.offset_of(text, {1, 1}), 14u);

  EXPECT_EQ(idx.position_of(text, 2), (Utf16Position{0, 1}));
  EXPECT_EQ(idx.position_of(text, 5), (Utf16Position{0, 2}));
  EXPECT_EQ(idx.position_of(text, 9), (Utf16Position{0, 4}));
  EXPECT_EQ(idx.position_of(text, 10), (Utf16Position{0, 5}));
  EXPECT_EQ(idx.position_of(text, 11), (Utf16Position{1, 0}));
  EXPECT_EQ(idx.position_of(text, 14), (Utf16Position{1, 1}));

  // Every code point boundary round-trips.
  for (size_t off : {0u, 2u, 5u, 9u, 10u, 11u, 14u}) {
    EXPECT_EQ(idx.offset_of(text, idx.position_of(text, off)), off) << "offset " << off;
  }
}

TEST(LineIndex, PositionsPastLineEndClampToLineEnd) {
  const std::string text = "ab\ncd" + kE + "\nlast";
  LineIndex idx(text);
  ASSERT_EQ(idx.line_count(), 3u);
  EXPECT_EQ(idx.offset_of(text, {0, 99}), 2u);  // before the '\n', not past it
  EXPECT_EQ(idx.offset_of(text, {1, 3}), 7u);   // "cdé" has 3 units
  EXPECT_EQ(idx.offset_of(text, {1, 4}), 7u);
  EXPECT_EQ(idx.offset_of(text, {2, 99}), text.size());
}

TEST(LineIndex, LinesPastEndClampToTextEnd) {
  const std::string text = "ab\ncd";
  LineIndex idx(text);
  EXPECT_EQ(idx.offset_of(text, {2, 0}), text.size());
  EXPECT_EQ(idx.offset_of(text, {1000, 5}), text.size());
  EXPECT_EQ(idx.position_of(text, 1000), (Utf16Position{1, 2}));
}

TEST(LineIndex, TrailingNewlineStartsAnEmptyLine) {
  const std::string text = "x = 1\n";
  LineIndex idx(text);
  ASSERT_EQ(idx.line_count(), 2u);
  EXPECT_EQ(idx.line_start(1), 6u);
  EXPECT_EQ(idx.offset_of(text, {1, 0}), 6u);
  EXPECT_EQ(idx.offset_of(text, {1, 4}), 6u);
  EXPECT_EQ(idx.position_of(text, 6), (Utf16Position{1, 0}));
}

TEST(LineIndex, CrlfIsOneTerminator) {
  const std::string text = "ab\r\ncd\r\n";
  LineIndex idx(text);
  ASSERT_EQ(idx.line_count(), 3u);
  EXPECT_EQ(idx.line_start(1), 4u);
  EXPECT_EQ(idx.line_start(2), 8u);
  EXPECT_EQ(idx.line_content_end(text, 0), 2u);
  EXPECT_EQ(idx.line_content_end(text, 1), 6u);
  EXPECT_EQ(idx.line_content_end(text, 2), 8u);
  // Past the end of a CRLF line clamps before the '\r'.
  EXPECT_EQ(idx.offset_of(text, {0, 10}), 2u);
  EXPECT_EQ(idx.offset_of(text, {1, 2}), 6u);
  // The '\r' and the '\n' bytes both map to the end of their line.
  EXPECT_EQ(idx.position_of(text, 2), (Utf16Position{0, 2}));
  EXPECT_EQ(idx.position_of(text, 3), (Utf16Position{0, 2}));
  EXPECT_EQ(idx.position_of(text, 4), (Utf16Position{1, 0}));
  EXPECT_EQ(idx.line_of_offset(3), 0u);
  EXPECT_EQ(idx.line_of_offset(4), 1u);
}

TEST(LineIndex, LoneCarriageReturnEndsALine) {
  const std::string text = "ab\rcd\re";
  LineIndex idx(text);
  ASSERT_EQ(idx.line_count(), 3u);
  EXPECT_EQ(idx.line_start(1), 3u);
  EXPECT_EQ(idx.line_start(2), 6u);
  EXPECT_EQ(idx.line_content_end(text, 0), 2u);
  EXPECT_EQ(idx.offset_of(text, {1, 1}), 4u);
  EXPECT_EQ(idx.offset_of(text, {1, 9}), 5u);
  EXPECT_EQ(idx.offset_of(text, {2, 1}), 7u);
  EXPECT_EQ(idx.position_of(text, 4), (Utf16Position{1, 1}));
}

TEST(LineIndex, MixedTerminatorsCrCrlfLf) {
  // "\r" then "\r\n" then "\n": four lines, all but the last empty.
  const std::string text = "\r\r\n\nz";
  LineIndex idx(text);
  ASSERT_EQ(idx.line_count(), 4u);
  EXPECT_EQ(idx.line_start(1), 1u);
  EXPECT_EQ(idx.line_start(2), 3u);
  EXPECT_EQ(idx.line_start(3), 4u);
  for (uint32_t line = 0; line < 3; ++line) {
    EXPECT_EQ(idx.line_content_end(text, line), idx.line_start(line)) << "line " << line;
    EXPECT_EQ(idx.offset_of(text, {line, 5}), idx.line_start(line)) << "line " << line;
  }
  EXPECT_EQ(idx.position_of(text, 5), (Utf16Position{3, 1}));
}

TEST(LineIndex, InvalidUtf8CountsOneUnitPerByte) {
  const std::string text =
      "a\xFF\xFE"
      "b\nc";
  LineIndex idx(text);
  EXPECT_EQ(idx.position_of(text, 3), (Utf16Position{0, 3}));
  EXPECT_EQ(idx.position_of(text, 4), (Utf16Position{0, 4}));
  EXPECT_EQ(idx.offset_of(text, {0, 2}), 2u);
  EXPECT_EQ(idx.offset_of(text, {0, 4}), 4u);
  EXPECT_EQ(idx.offset_of(text, {0, 5}), 4u);
}

TEST(LineIndex, TreeSitterPointsCountRowsByNewlineOnly) {
  // A lone '\r' is an LSP line break but not a tree-sitter row break; columns are bytes.
  const std::string text = "ab\rc" + kE + "\r\nxy\nz";
  //                        0 1 2 3 45   6 7  8 9 10 11
  LineIndex idx(text);
  EXPECT_EQ(idx.line_count(), 4u);  // LSP: "ab", "cé", "xy", "z"
  auto point = [&](size_t off) {
    const BytePoint p = idx.point_of(text, off);
    return std::make_pair(p.row, p.column);
  };
  EXPECT_EQ(point(0), std::make_pair(0u, 0u));
  EXPECT_EQ(point(3), std::make_pair(0u, 3u));  // after the lone '\r': still row 0
  EXPECT_EQ(point(6), std::make_pair(0u, 6u));  // the '\r' of CRLF, after "é" (2 bytes)
  EXPECT_EQ(point(7), std::make_pair(0u, 7u));  // the '\n' itself belongs to row 0
  EXPECT_EQ(point(8), std::make_pair(1u, 0u));
  EXPECT_EQ(point(10), std::make_pair(1u, 2u));
  EXPECT_EQ(point(11), std::make_pair(2u, 0u));
  EXPECT_EQ(point(12), std::make_pair(2u, 1u));
  EXPECT_EQ(point(999), std::make_pair(2u, 1u));  // clamps to the end
}

TEST(LineIndex, LongTextsIndexAsAByteByByteScanDoes) {
  // The index scans sixteen bytes at a time: terminators at every place in a block, and "\r\n"
  // split across two, must give what one byte at a time gives.
  std::mt19937 rng(20261204);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const std::string pieces[] = {"a", "bcdefghijklmnop", "\n", "\r", "\r\n", kE};
  for (int round = 0; round < 400; ++round) {
    std::string text;
    for (size_t i = pick(40); i > 0; --i) text += pieces[pick(std::size(pieces))];
    std::vector<size_t> starts = {0};
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')))
        starts.push_back(i + 1);
    }
    const LineIndex idx(text);
    ASSERT_EQ(idx.line_count(), starts.size()) << round;
    for (uint32_t line = 0; line < starts.size(); ++line)
      ASSERT_EQ(idx.line_start(line), starts[line]) << round << " line " << line;
    uint32_t row = 0;
    size_t row_start = 0;
    for (size_t offset = 0; offset <= text.size(); ++offset) {
      const BytePoint p = idx.point_of(text, offset);
      ASSERT_EQ(p.row, row) << round << " offset " << offset;
      ASSERT_EQ(p.column, offset - row_start) << round << " offset " << offset;
      if (offset < text.size() && text[offset] == '\n') {
        ++row;
        row_start = offset + 1;
      }
    }
  }
}

TEST(LineIndex, LineOfOffsetUsesLspLines) {
  const std::string text = "a\rb\r\nc\nd";
  LineIndex idx(text);
  EXPECT_EQ(idx.line_of_offset(0), 0u);
  EXPECT_EQ(idx.line_of_offset(1), 0u);
  EXPECT_EQ(idx.line_of_offset(2), 1u);
  EXPECT_EQ(idx.line_of_offset(5), 2u);
  EXPECT_EQ(idx.line_of_offset(7), 3u);
}

}  // namespace
}  // namespace mk::text
