#include "source/pallas/forwarding_text.h"

#include <cctype>

namespace mk::pallas {

bool passes_own_argument(std::string_view def_text, std::string_view callee) {
  const size_t header_end = def_text.find(':', def_text.find(')'));
  const std::string_view header = def_text.substr(0, header_end);
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = def_text.find(callee, header_end); at != std::string_view::npos;
       at = def_text.find(callee, at + 1)) {
    size_t p = at + callee.size();
    if (at > 0 && is_word(def_text[at - 1])) continue;  // part of a longer name
    while (p < def_text.size() && std::isspace(static_cast<unsigned char>(def_text[p]))) ++p;
    if (p >= def_text.size() || def_text[p] != '(') continue;
    ++p;
    while (p < def_text.size() && std::isspace(static_cast<unsigned char>(def_text[p]))) ++p;
    if (p < def_text.size() && def_text[p] == '*') return true;
    size_t e = p;
    while (e < def_text.size() && is_word(def_text[e])) ++e;
    const std::string_view word = def_text.substr(p, e - p);
    if (word.empty()) continue;
    if (word == "kernel") return true;
    // The word is a parameter when the header names it as a whole word.
    for (size_t h = header.find(word); h != std::string_view::npos; h = header.find(word, h + 1)) {
      const bool starts = h == 0 || !is_word(header[h - 1]);
      const bool ends = h + word.size() >= header.size() || !is_word(header[h + word.size()]);
      if (starts && ends) return true;
    }
  }
  return false;
}

}  // namespace mk::pallas
