// text::line_diff: the fewest whole-line replacements, in order, that turn one text into another.
#include "source/text/line_diff.h"

#include <gtest/gtest.h>

#include <string>

namespace mk::text {
namespace {

// Applies replacements (ascending, non-overlapping, offsets into `before`) back to front.
std::string applied(std::string before, const std::vector<LineReplacement>& edits) {
  for (auto it = edits.rbegin(); it != edits.rend(); ++it)
    before.replace(it->start, it->end - it->start, it->new_text);
  return before;
}

TEST(LineDiff, EqualTextsNeedNoEdit) {
  EXPECT_TRUE(line_diff("a\nb\nc\n", "a\nb\nc\n").empty());
  EXPECT_TRUE(line_diff("", "").empty());
}

TEST(LineDiff, OneChangedLineIsReplacedAlone) {
  const std::string before = "def k():\n    x = 1\n    return x\n";
  const std::string after = "def k():\n    x = 2\n    return x\n";
  const auto edits = line_diff(before, after);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].start, 9u);  // the start of line 1
  EXPECT_EQ(edits[0].end, 19u);   // the start of line 2
  EXPECT_EQ(edits[0].new_text, "    x = 2\n");
  EXPECT_EQ(applied(before, edits), after);
}

TEST(LineDiff, SeparateChangesAreSeparateHunksAndEqualLinesStayOut) {
  const std::string before = "a\nb\nc\nd\ne\nf\ng\n";
  const std::string after = "a\nB\nc\nd\nnew\ne\nf\n";  // b changed, new inserted, g deleted
  const auto edits = line_diff(before, after);
  ASSERT_EQ(edits.size(), 3u);
  EXPECT_EQ(before.substr(edits[0].start, edits[0].end - edits[0].start), "b\n");
  EXPECT_EQ(edits[0].new_text, "B\n");
  EXPECT_EQ(edits[1].start, edits[1].end);  // a pure insertion before "e"
  EXPECT_EQ(edits[1].start, before.find("e\n"));
  EXPECT_EQ(edits[1].new_text, "new\n");
  EXPECT_EQ(before.substr(edits[2].start, edits[2].end - edits[2].start), "g\n");
  EXPECT_EQ(edits[2].new_text, "");
  EXPECT_EQ(applied(before, edits), after);
}

TEST(LineDiff, AnInsertionAtTheEndTouchesOnlyTheEnd) {
  const std::string before = "a\nb\n";
  const std::string after = "a\nb\nc\nd\n";
  const auto edits = line_diff(before, after);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].start, before.size());
  EXPECT_EQ(edits[0].end, before.size());
  EXPECT_EQ(edits[0].new_text, "c\nd\n");
  // Without a final newline the last line itself changes (it gains one).
  const auto unterminated = line_diff("a\nb", "a\nb\nc\n");
  ASSERT_EQ(unterminated.size(), 1u);
  EXPECT_EQ(unterminated[0].start, 2u);
  EXPECT_EQ(applied("a\nb", unterminated), "a\nb\nc\n");
}

TEST(LineDiff, DeletingEverythingIsOneEditOverTheWholeText) {
  const std::string before = "a\nb\nc\n";
  const auto edits = line_diff(before, "");
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].start, 0u);
  EXPECT_EQ(edits[0].end, before.size());
  EXPECT_EQ(edits[0].new_text, "");
  EXPECT_EQ(applied("", line_diff("", before)), before);
}

TEST(LineDiff, CrlfEndingsArePartOfTheLine) {
  // The "\r\n" stays with its line: unchanged CRLF lines are left alone, and a line whose ending
  // alone changes (CRLF -> LF) is a changed line, so the result keeps the new text's endings.
  const std::string before = "a\r\nb\r\nc\r\n";
  const auto edits = line_diff(before, "a\r\nB\r\nc\r\n");
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].start, 3u);
  EXPECT_EQ(edits[0].end, 6u);
  EXPECT_EQ(edits[0].new_text, "B\r\n");
  const auto endings = line_diff(before, "a\r\nb\nc\r\n");
  ASSERT_EQ(endings.size(), 1u);
  EXPECT_EQ(endings[0].new_text, "b\n");
  EXPECT_EQ(applied(before, endings), "a\r\nb\nc\r\n");
}

TEST(LineDiff, RepeatedLinesAlignToTheLongestCommonRun) {
  // Blank lines and `pass` repeat in real code; a naive first-match alignment would rewrite more.
  const std::string before = "x\n\npass\n\ny\n\npass\n";
  const std::string after = "x\n\npass\n\nz\ny\n\npass\n";
  const auto edits = line_diff(before, after);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].start, edits[0].end);
  EXPECT_EQ(edits[0].new_text, "z\n");
  EXPECT_EQ(applied(before, edits), after);
}

}  // namespace
}  // namespace mk::text
