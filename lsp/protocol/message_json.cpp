#include "lsp/protocol/message_json.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mk::rpc {

namespace {

// Bodies and strings below these go through json::parse alone: the fast path pays off only when
// one string is most of a large body.
constexpr size_t kFastPathBodyBytes = 64 * 1024;
constexpr size_t kFastPathStringBytes = 32 * 1024;

// Stands in for the long string while the rest is parsed. Spelled with \u0000 escapes, which
// the body is checked not to hold; a value equal to it spelled otherwise is found by the count.
constexpr std::string_view kPlaceholderLiteral = "\"\\u0000maxkernel long string\\u0000\"";
const std::string& placeholder_value() {
  static const std::string value = std::string("\0maxkernel long string\0", 23);
  return value;
}

// Bytes that end a run of plain string bytes: the quote, a backslash, a control character or
// the start of a multi-byte UTF-8 sequence (checked on its own).
bool special(unsigned char c) {
  return c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
}

// The first special byte of s at or after `at`, or s.size(). Sixteen bytes at a time where SSE2
// is there: a document's text is one long string, and this scan is most of its decoding.
size_t next_special(std::string_view s, size_t at) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; at + 16 <= s.size(); at += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + at));
    // A signed compare: bytes from 0x80 read as negative, so "below 0x20" takes them too.
    const __m128i hits =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmplt_epi8(v, space));
    if (const int mask = _mm_movemask_epi8(hits))
      return at + static_cast<size_t>(__builtin_ctz(mask));
  }
#endif
  while (at < s.size() && !special(static_cast<unsigned char>(s[at]))) ++at;
  return at;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool read_hex4(std::string_view s, size_t at, uint32_t& value) {
  if (at + 4 > s.size()) return false;
  value = 0;
  for (size_t i = 0; i < 4; ++i) {
    const int h = hex_value(s[at + i]);
    if (h < 0) return false;
    value = value * 16 + static_cast<uint32_t>(h);
  }
  return true;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The length of the well-formed UTF-8 sequence at s[at] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0.
size_t utf8_sequence(std::string_view s, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[at + i]); };
  const unsigned char c = byte(0);
  size_t n = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) low = 0xA0;
    if (c == 0xED) high = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) low = 0x90;
    if (c == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + n > s.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return n;
}

// The first and one-past-last byte of the longest string literal in `body` (quotes included),
// or {0, 0}. Strings are followed through their escapes; everything else is skipped.
std::pair<size_t, size_t> longest_literal(std::string_view body) {
  std::pair<size_t, size_t> best{0, 0};
  size_t i = 0;
  while (i < body.size()) {
    const void* quote = std::memchr(body.data() + i, '"', body.size() - i);
    if (!quote) break;
    const size_t start = static_cast<size_t>(static_cast<const char*>(quote) - body.data());
    size_t j = start + 1;
    for (;;) {
      const void* next = std::memchr(body.data() + j, '"', body.size() - j);
      if (!next) return best;  // unterminated: json::parse reports it
      j = static_cast<size_t>(static_cast<const char*>(next) - body.data());
      // The quote ends the string unless an odd number of backslashes precedes it.
      size_t slashes = 0;
      while (j - slashes > start + 1 && body[j - slashes - 1] == '\\') ++slashes;
      if (slashes % 2 == 0) break;
      ++j;
    }
    if (j + 1 - start > best.second - best.first) best = {start, j + 1};
    i = j + 1;
  }
  return best;
}

// Counts the values equal to the placeholder and remembers the last one.
void find_placeholder(nlohmann::json& value, nlohmann::json*& found, size_t& count) {
  if (value.is_string()) {
    if (value.get_ref<const std::string&>() == placeholder_value()) {
      found = &value;
      ++count;
    }
  } else if (value.is_structured()) {
    for (nlohmann::json& item : value) find_placeholder(item, found, count);
  }
}

}  // namespace

bool decode_json_string(std::string_view s, std::string& out) {
  out.clear();
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t run = next_special(s, i);
    out.append(s.data() + i, run - i);
    i = run;
    if (i == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = utf8_sequence(s, i);
      if (n == 0) return false;
      out.append(s.data() + i, n);
      i += n;
      continue;
    }
    if (c != '\\' || i + 1 >= s.size()) return false;  // a raw quote or control character
    const char e = s[i + 1];
    i += 2;
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!read_hex4(s, i, cp)) return false;
        i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate first
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low = 0;
          if (i + 1 >= s.size() || s[i] != '\\' || s[i + 1] != 'u' || !read_hex4(s, i + 2, low) ||
              low < 0xDC00 || low > 0xDFFF)
            return false;
          i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(cp, out);
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

nlohmann::json parse_message(std::string_view body) {
  if (body.size() < kFastPathBodyBytes) return nlohmann::json::parse(body);
  const auto [start, end] = longest_literal(body);
  // The placeholder spelled as in `rest` must not be there already. Inside the long literal it
  // does not matter (the literal is replaced whole), and looking there costs a scan of the text.
  const std::string_view spelled = kPlaceholderLiteral.substr(1, kPlaceholderLiteral.size() - 2);
  if (end - start < kFastPathStringBytes ||
      body.substr(0, start).find(spelled) != std::string_view::npos ||
      body.substr(end).find(spelled) != std::string_view::npos)
    return nlohmann::json::parse(body);
  std::string decoded;
  if (!decode_json_string(body.substr(start + 1, end - start - 2), decoded))
    return nlohmann::json::parse(body);
  std::string rest;
  rest.reserve(start + kPlaceholderLiteral.size() + (body.size() - end));
  rest.append(body.substr(0, start)).append(kPlaceholderLiteral).append(body.substr(end));
  nlohmann::json value = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
  nlohmann::json* slot = nullptr;
  size_t count = 0;
  if (!value.is_discarded()) find_placeholder(value, slot, count);
  // Not parsed, the long string was a key, or a value spelled like the placeholder: the plain way.
  if (count != 1) return nlohmann::json::parse(body);
  slot->get_ref<std::string&>() = std::move(decoded);
  return value;
}

}  // namespace mk::rpc
