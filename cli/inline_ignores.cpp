#include "cli/inline_ignores.h"

#include <regex>

namespace mk::cli {

namespace {

std::string_view line_at(std::string_view text, uint32_t line) {
  size_t start = 0;
  for (uint32_t i = 0; i < line; ++i) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  const size_t end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

}  // namespace

bool ignored_inline(std::string_view text, uint32_t line, const std::string& code) {
  static const std::regex comment(R"(#\s*maxkernel:\s*ignore(\[([^\]]*)\])?)");
  const std::string_view l = line_at(text, line);
  if (l.find('#') == std::string_view::npos) return false;
  std::match_results<std::string_view::const_iterator> m;
  for (auto it = l.begin(); std::regex_search(it, l.end(), m, comment); it = m[0].second) {
    if (!m[1].matched) return true;  // every code
    static const std::regex separator(R"([\s,]+)");
    const std::string codes = m[2].str();
    for (std::sregex_token_iterator c(codes.begin(), codes.end(), separator, -1), end; c != end;
         ++c)
      if (*c == code) return true;
  }
  return false;
}

}  // namespace mk::cli
