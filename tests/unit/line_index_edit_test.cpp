// LineIndex::apply_edit: updating the index in place after an edit must give the same index as
// building it again from the new text, whatever the edit does to "\r", "\n" and "\r\n".
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "source/text/line_index.h"
#include "source/text/text_document.h"

namespace mk::text {
namespace {

void expect_same_index(const LineIndex& updated, const std::string& text,
                       const std::string& context) {
  const LineIndex rebuilt(text);
  ASSERT_EQ(updated.line_count(), rebuilt.line_count()) << context;
  for (uint32_t line = 0; line < rebuilt.line_count(); ++line) {
    ASSERT_EQ(updated.line_start(line), rebuilt.line_start(line)) << context << " line " << line;
  }
  for (size_t offset = 0; offset <= text.size(); ++offset) {
    const BytePoint a = updated.point_of(text, offset), b = rebuilt.point_of(text, offset);
    ASSERT_EQ(a.row, b.row) << context << " offset " << offset;
    ASSERT_EQ(a.column, b.column) << context << " offset " << offset;
  }
}

TEST(LineIndexEdit, RandomEditsMatchARebuiltIndex) {
  std::mt19937 rng(20261130);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  static const char* kPieces[] = {"a", "\n", "\r", "\r\n", "\xC3\xA9", "bc", "\n\n", ""};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (size_t i = pick(12); i > 0; --i) text += kPieces[pick(std::size(kPieces))];
    LineIndex index(text);
    std::string history = "start '" + text + "'";
    for (int step = 0; step < 20; ++step) {
      const size_t start = pick(text.size() + 1);
      const size_t old_end = start + pick(text.size() - start + 1);
      std::string with;
      for (size_t i = pick(3); i > 0; --i) with += kPieces[pick(std::size(kPieces))];
      text.replace(start, old_end - start, with);
      index.apply_edit(text, start, old_end, start + with.size());
      history +=
          " | [" + std::to_string(start) + "," + std::to_string(old_end) + ")->'" + with + "'";
      expect_same_index(index, text, history);
      if (HasFailure()) return;
    }
  }
}

TEST(LineIndexEdit, TextDocumentKeepsPositionsRightAcrossLineBreakEdits) {
  TextDocument doc("file:///t.py", 1, "ab\rcd\nef");
  // Inserting "\n" right after the lone "\r" turns it into one "\r\n" terminator.
  doc.apply_change({{1, 0}, {1, 0}}, "\n");
  EXPECT_EQ(doc.text(), "ab\r\ncd\nef");
  EXPECT_EQ(doc.lines().line_count(), 3u);
  EXPECT_EQ(doc.offset_of({1, 1}), 5u);
  // Replacing the "\r\n" with "\n" keeps three lines.
  doc.apply_change({{0, 2}, {1, 0}}, "\n");
  EXPECT_EQ(doc.text(), "ab\ncd\nef");
  EXPECT_EQ(doc.position_of(7), (Utf16Position{2, 1}));
}

}  // namespace
}  // namespace mk::text
