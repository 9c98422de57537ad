// Free text -> a safe FTS5 query. Users and agents pass raw error messages full of quotes,
// parentheses and stars; FTS5 would read those as query syntax and fail, so only word terms
// survive, each quoted, and any one of them may match (BM25 then ranks by how many and how rare).
#include <array>
#include <string_view>
#include <unordered_set>

#include "knowledge/documents.h"

namespace mk::knowledge {

namespace {

// Words that carry no meaning for retrieval; short on purpose (technical words stay).
constexpr std::array<std::string_view, 48> kStopWords = {
    "a",    "an",   "the",  "and",  "or",    "not",   "of",    "to",  "in",    "is",
    "are",  "be",   "was",  "were", "for",   "with",  "on",    "at",  "by",    "this",
    "that", "it",   "its",  "as",   "from",  "into",  "but",   "if",  "then",  "than",
    "so",   "can",  "has",  "have", "had",   "do",    "does",  "did", "which", "what",
    "how",  "when", "near", "got",  "there", "these", "those", "such"};

bool is_stop_word(std::string_view w) {
  for (std::string_view s : kStopWords)
    if (s == w) return true;
  return false;
}

// Word characters: ASCII letters and digits, and any non-ASCII byte (UTF-8 letters stay whole;
// unicode61 decides what they mean).
bool is_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

}  // namespace

std::string fts_match_expression(const std::string& text, size_t max_terms) {
  std::string expression;
  std::unordered_set<std::string> seen;
  size_t i = 0;
  while (i < text.size() && seen.size() < max_terms) {
    while (i < text.size() && !is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) break;
    std::string word = text.substr(start, i - start);
    for (char& c : word)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool numeric = word.find_first_not_of("0123456789") == std::string::npos;
    if (word.size() < 2 && !numeric) continue;
    if (word.size() > 64 || is_stop_word(word) || !seen.insert(word).second) continue;
    if (!expression.empty()) expression += " OR ";
    expression += '"' + word + '"';
  }
  return expression;
}

}  // namespace mk::knowledge
