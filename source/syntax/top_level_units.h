// A module's top-level statements found by a lexical pass, without a parse: where each begins and
// ends and what a def or class binds. One pass over the bytes, so a large file's first parse can
// leave out the definitions it does not need (tree-sitter's included ranges).
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "source/syntax/byte_span.h"

namespace mk::syntax {

struct TopLevelUnit {
  enum class Kind {
    Definition,  // def, async def or class, with its decorators
    Import,      // import, from ... import
    Compound,    // if, for, while, try, with, match and their async forms: may bind anything
    Simple,      // any other statement: an assignment, an expression, ...
  };
  ByteSpan span;  // from the first line's column 0 to the start of the next unit (or the end)
  Kind kind = Kind::Simple;
  std::string_view name;  // the name a definition binds; empty for the other kinds
  // A def's body (not a class's): from its first token after the header's colon to the end of
  // its last token, where a parse ends the def. Empty for the other kinds.
  ByteSpan body;
};

// The units in order; together they cover the text from the first statement to the end (text
// before it, blank lines and comments only, belongs to no unit). A line that continues the
// statement before it (else/elif/except/finally, a decorator's def) stays in that unit. Strings,
// brackets and backslash continuations are followed; a file that defeats this (say, an unclosed
// bracket) yields fewer, longer units, never a cut inside a statement that parses.
std::vector<TopLevelUnit> top_level_units(std::string_view text);

// The characters of identifier-like words: letters, digits, `_` and every non-ASCII byte.
inline constexpr std::array<bool, 256> kWordChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c)
    table[c] = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c >= '0' && c <= '9') || c >= 0x80;
  return table;
}();

inline bool is_word_char(char c) {
  return kWordChars[static_cast<unsigned char>(c)];
}

// Calls `f` with every identifier-like word of `text` (code, strings and comments alike).
template <class F>
void for_each_word(std::string_view text, F&& f) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !is_word_char(text[i])) ++i;
    if (i == text.size()) break;
    const size_t start = i;
    while (i < text.size() && is_word_char(text[i])) ++i;
    if (!(text[start] >= '0' && text[start] <= '9')) f(text.substr(start, i - start));
  }
}

}  // namespace mk::syntax
