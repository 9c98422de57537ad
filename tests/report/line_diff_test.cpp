#include "agents/report/line_diff.h"

#include <gtest/gtest.h>

namespace mk::report {
namespace {

std::string numbered(int from, int to, const std::string& prefix = "line ") {
  std::string text;
  for (int k = from; k <= to; ++k) text += prefix + std::to_string(k) + "\n";
  return text;
}

TEST(LineDiff, IdenticalTextsHaveNoHunks) {
  EXPECT_TRUE(unified_diff("a\nb\n", "a\nb\n").empty());
  EXPECT_TRUE(unified_diff("a\r\nb\r\n", "a\nb").empty());  // line endings do not count
  EXPECT_TRUE(unified_diff("", "").empty());
}

TEST(LineDiff, OneChangedLineWithContext) {
  const std::string before = numbered(1, 10);
  std::string after = before;
  after.replace(after.find("line 5\n"), 7, "line five\n");
  const auto hunks = unified_diff(before, after, 3);
  ASSERT_EQ(hunks.size(), 1u);
  EXPECT_EQ(hunks[0].header(), "@@ -2,7 +2,7 @@");
  ASSERT_EQ(hunks[0].lines.size(), 8u);
  EXPECT_EQ(hunks[0].lines[3].kind, DiffLine::Kind::Removed);
  EXPECT_EQ(hunks[0].lines[3].text, "line 5");
  EXPECT_EQ(hunks[0].lines[4].kind, DiffLine::Kind::Added);
  EXPECT_EQ(hunks[0].lines[4].text, "line five");
  EXPECT_EQ(format_unified_diff(hunks, "a", "b"),
            "--- a\n+++ b\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n"
            " line 6\n line 7\n line 8\n");
}

TEST(LineDiff, DistantChangesGiveSeparateHunksAndNearOnesMerge) {
  const std::string before = numbered(1, 30);
  std::string far = before;
  far.replace(far.find("line 3\n"), 7, "THREE\n");
  far.replace(far.find("line 25\n"), 8, "TWENTY-FIVE\n");
  EXPECT_EQ(unified_diff(before, far, 3).size(), 2u);
  std::string near = before;
  near.replace(near.find("line 3\n"), 7, "THREE\n");
  near.replace(near.find("line 9\n"), 7, "NINE\n");
  EXPECT_EQ(unified_diff(before, near, 3).size(), 1u);  // 5 lines apart <= 2 * context
}

TEST(LineDiff, InsertionsAndDeletionsCountLines) {
  const auto added = unified_diff("a\nb\n", "a\nx\ny\nb\n", 1);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].header(), "@@ -1,2 +1,4 @@");
  const auto at_start = unified_diff("a\n", "new\na\n", 0);
  ASSERT_EQ(at_start.size(), 1u);
  EXPECT_EQ(at_start[0].header(), "@@ -0,0 +1 @@");
  const auto removed = unified_diff("a\nb\nc\n", "a\nc\n", 0);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].header(), "@@ -2 +1,0 @@");
  EXPECT_EQ(unified_diff("", "only\n")[0].header(), "@@ -0,0 +1 @@");
}

TEST(LineDiff, KeepsTheLongestCommonSubsequence) {
  // Moving one line: an LCS diff removes and adds just that line.
  const auto hunks = unified_diff("a\nb\nc\nd\n", "b\nc\nd\na\n", 0);
  int removed = 0, added = 0;
  for (const auto& h : hunks)
    for (const auto& l : h.lines) {
      removed += l.kind == DiffLine::Kind::Removed;
      added += l.kind == DiffLine::Kind::Added;
    }
  EXPECT_EQ(removed, 1);
  EXPECT_EQ(added, 1);
}

TEST(LineDiff, HugeRewritesFallBackToOneReplacement) {
  const std::string before = numbered(1, 5000, "old ");
  const std::string after = numbered(1, 5000, "new ");
  const auto hunks = unified_diff(before, after, 3);
  ASSERT_EQ(hunks.size(), 1u);
  EXPECT_EQ(hunks[0].old_count, 5000);
  EXPECT_EQ(hunks[0].new_count, 5000);
}

}  // namespace
}  // namespace mk::report
