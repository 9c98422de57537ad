#include "agents/report/html.h"

#include <gtest/gtest.h>

namespace mk::report {
namespace {

TEST(HtmlEscape, EscapesMarkupAndQuotes) {
  EXPECT_EQ(html_escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
}

TEST(HtmlEscape, KeepsUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(html_escape("µs \xE2\x98\x85"), "µs \xE2\x98\x85");
  EXPECT_EQ(html_escape("a\xFF"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(html_escape("\xE2\x98"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated sequence
  EXPECT_EQ(html_escape(std::string("a\0b\x07\tc\r\n", 9)), "ab\tc\n");
}

TEST(TruncateUtf8, CutsAtCodePoints) {
  EXPECT_EQ(truncate_utf8("abc", 5), "abc");
  EXPECT_EQ(truncate_utf8("\xE2\x98\x85\xE2\x98\x85\xE2\x98\x85", 2),
            "\xE2\x98\x85\xE2\x98\x85\xE2\x80\xA6");
}

TEST(Format, SecondsAndSpeedups) {
  EXPECT_EQ(format_seconds(2.5), "2.5 s");
  EXPECT_EQ(format_seconds(0.00123), "1.23 ms");
  EXPECT_EQ(format_seconds(4.12e-4), "412 us");
  EXPECT_EQ(format_speedup(1.4249), "1.42x");
  EXPECT_EQ(format_utc(0), "-");
  EXPECT_EQ(format_utc(86400), "1970-01-02 00:00:00 UTC");
}

}  // namespace
}  // namespace mk::report
