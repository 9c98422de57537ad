// Small helpers for writing the self-contained HTML report: escaping (every piece of text that
// comes from a run goes through html_escape) and number/time formatting.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mk::report {

// Escapes & < > " ' so the text is safe in element content and in quoted attribute values.
// Invalid UTF-8 bytes become U+FFFD and control characters other than tab/newline are dropped,
// so the page stays well-formed whatever a worker or an LLM wrote.
std::string html_escape(std::string_view text);

// At most `max_chars` code points of `text` (UTF-8 aware), with "…" when cut.
std::string truncate_utf8(std::string_view text, size_t max_chars);

std::string format_seconds(double seconds);  // "412 us", "1.23 ms", "2.5 s"
std::string format_speedup(double speedup);  // "1.42x"
std::string format_number(double value, int decimals);
std::string format_utc(int64_t unix_seconds);  // "2026-11-30 05:14:02 UTC"; "-" for 0

}  // namespace mk::report
