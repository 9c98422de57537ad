#include "agents/report/html.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace mk::report {

namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 when it is not valid UTF-8.
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF)
    length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF)
    length = 3;
  else if (lead >= 0xF0 && lead <= 0xF4)
    length = 4;
  else
    return 0;
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  // Overlong forms, surrogates and code points above U+10FFFF.
  if (lead == 0xE0 && byte(i + 1) < 0xA0) return 0;
  if (lead == 0xED && byte(i + 1) >= 0xA0) return 0;
  if (lead == 0xF0 && byte(i + 1) < 0x90) return 0;
  if (lead == 0xF4 && byte(i + 1) >= 0x90) return 0;
  return length;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t')
          out.push_back(c);
        else if (c == '\r')
          break;  // CRLF files: the \n stays
        break;
    }
    ++i;
  }
  return out;
}

std::string truncate_utf8(std::string_view text, size_t max_chars) {
  size_t i = 0, chars = 0;
  while (i < text.size() && chars < max_chars) {
    const size_t length = utf8_sequence_length(text, i);
    i += length == 0 ? 1 : length;
    ++chars;
  }
  if (i >= text.size()) return std::string(text);
  return std::string(text.substr(0, i)) + "\xE2\x80\xA6";  // U+2026
}

std::string format_number(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  char buffer[64];
  const double magnitude = std::fabs(seconds);
  if (magnitude >= 1.0)
    std::snprintf(buffer, sizeof buffer, "%.3g s", seconds);
  else if (magnitude >= 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.3g ms", seconds * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.3g us", seconds * 1e6);
  return buffer;
}

std::string format_speedup(double speedup) {
  if (!std::isfinite(speedup)) return "-";
  return format_number(speedup, 2) + "x";
}

std::string format_utc(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[40];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return buffer;
}

}  // namespace mk::report
