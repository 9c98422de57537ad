#include "source/syntax/top_level_units.h"

#include <array>
#include <cstdint>
#include <optional>

namespace mk::syntax {

namespace {

// Characters that open, close or start nothing the pass follows, and the blanks among them.
constexpr std::array<bool, 256> char_table(std::string_view members, bool member) {
  std::array<bool, 256> table{};
  for (bool& entry : table) entry = !member;
  for (char c : members) table[static_cast<unsigned char>(c)] = member;
  return table;
}
constexpr std::array<bool, 256> kPlain = char_table("\n#\"'\\([{)]}:", false);
constexpr std::array<bool, 256> kBlank = char_table(" \t\r\f", true);

// The identifier at `i` (empty when none), and where it ends.
std::string_view word_at(std::string_view text, size_t i) {
  size_t end = i;
  while (end < text.size() && is_word_char(text[end])) ++end;
  return text.substr(i, end - i);
}

// The word after `i` and the blanks that follow it.
std::string_view next_word(std::string_view text, size_t i) {
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  return word_at(text, i);
}

// Past the string literal whose opening quote is at `i`. An unterminated one-line string ends at
// its line's newline, as Python's tokenizer gives up there too.
size_t skip_string(std::string_view text, size_t i) {
  const char quote = text[i];
  const bool triple = i + 2 < text.size() && text[i + 1] == quote && text[i + 2] == quote;
  i += triple ? 3 : 1;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\\') {
      i += 2;  // an escaped quote or newline never ends the string (raw strings included)
      continue;
    }
    if (c == quote) {
      if (!triple) return i + 1;
      if (i + 2 < text.size() && text[i + 1] == quote && text[i + 2] == quote) return i + 3;
    } else if (c == '\n' && !triple) {
      return i;
    }
    ++i;
  }
  return text.size();
}

// What a line starting with `word` at `i` defines: the name after def/class/async def, or
// nullopt when it is no definition.
std::optional<std::string_view> definition_name(std::string_view text, size_t i,
                                                std::string_view word) {
  if (word == "async") {
    const std::string_view def = next_word(text, i + word.size());
    if (def != "def") return std::nullopt;
    return next_word(text, static_cast<size_t>(def.data() - text.data()) + def.size());
  }
  if (word == "def" || word == "class") return next_word(text, i + word.size());
  return std::nullopt;
}

TopLevelUnit::Kind statement_kind(std::string_view first_word) {
  if (first_word == "import" || first_word == "from") return TopLevelUnit::Kind::Import;
  if (first_word == "if" || first_word == "for" || first_word == "while" || first_word == "try" ||
      first_word == "with" || first_word == "match" || first_word == "async")
    return TopLevelUnit::Kind::Compound;
  return TopLevelUnit::Kind::Simple;
}

bool continues_previous(std::string_view first_word) {
  return first_word == "else" || first_word == "elif" || first_word == "except" ||
         first_word == "finally";
}

}  // namespace

std::vector<TopLevelUnit> top_level_units(std::string_view text) {
  std::vector<TopLevelUnit> units;
  bool awaiting_definition = false;  // decorators seen, their def/class not yet
  int depth = 0;                     // open brackets
  bool continued = false;            // the last line ended with a backslash
  // Where the current unit is, if it is a def: its header, its colon seen, its body begun.
  enum class InDef { No, Header, Colon, Body } in_def = InDef::No;
  size_t token_end = 0;  // just past the current unit's last token so far
  // The column of the body's first line (none when the body follows the colon on its line), and
  // whether a comment line left of it has closed the body (a parse ends the def there).
  size_t body_indent = SIZE_MAX, line_start = 0;
  bool body_closed = false;
  auto end_unit = [&](size_t at) {
    TopLevelUnit& u = units.back();
    u.span.end = static_cast<uint32_t>(at);
    if (in_def == InDef::Body)
      u.body.end = static_cast<uint32_t>(token_end);
    else
      u.body = {};
  };
  // A def line starts its header: the body follows the first colon outside brackets.
  auto starts_def = [&](std::string_view word, size_t at) {
    const bool def =
        word == "def" || (word == "async" && next_word(text, at + word.size()) == "def");
    in_def = def ? InDef::Header : InDef::No;
  };
  auto token = [&](size_t start, size_t end, bool on_new_line) {
    if (in_def == InDef::Colon) {
      in_def = InDef::Body;
      units.back().body.start = static_cast<uint32_t>(start);
      body_indent = on_new_line ? start - line_start : SIZE_MAX;
      body_closed = false;
    }
    token_end = end;
  };
  size_t i = 0;
  while (i < text.size()) {
    // `i` is at the start of a physical line.
    const char first = text[i];
    const bool blank = first == ' ' || first == '\t' || first == '\r' || first == '\n' ||
                       first == '\f' || first == '#';
    if (depth == 0 && !continued && !blank) {
      const std::string_view word = word_at(text, i);
      if (!units.empty() && (awaiting_definition || continues_previous(word))) {
        if (awaiting_definition && first != '@') {
          awaiting_definition = false;
          units.back().name = definition_name(text, i, word).value_or(std::string_view());
          starts_def(word, i);
        }
      } else {
        if (!units.empty()) end_unit(i);
        in_def = InDef::No;
        TopLevelUnit unit;
        unit.span.start = static_cast<uint32_t>(i);
        if (first == '@') {
          unit.kind = TopLevelUnit::Kind::Definition;
          awaiting_definition = true;
        } else if (auto name = definition_name(text, i, word)) {
          unit.kind = TopLevelUnit::Kind::Definition;
          unit.name = *name;
          starts_def(word, i);
        } else {
          unit.kind = statement_kind(word);
        }
        units.push_back(unit);
      }
    }
    continued = false;
    bool token_line = false;           // a token seen on this line
    const bool new_line = depth == 0;  // not inside brackets continued from the line before
    line_start = i;
    // The rest of the line, and of any string or bracket that runs past it.
    while (i < text.size() && text[i] != '\n') {
      const char c = text[i];
      if (kPlain[static_cast<unsigned char>(c)]) {
        // A run that opens, closes and starts nothing (most of a line): only its tokens count.
        size_t first_token = SIZE_MAX, last_token = 0;
        for (; i < text.size() && kPlain[static_cast<unsigned char>(text[i])]; ++i) {
          if (!kBlank[static_cast<unsigned char>(text[i])]) {
            if (first_token == SIZE_MAX) first_token = i;
            last_token = i;
          }
        }
        if (first_token != SIZE_MAX && !units.empty()) {
          token(first_token, last_token + 1, new_line && !token_line);
          token_line = true;
        }
        continue;
      }
      if (c == '#') {
        const size_t start = i;
        while (i < text.size() && text[i] != '\n') ++i;
        // A parse puts a comment in the def when it follows a token on its line, or stands on a
        // line of its own indented as far as the body (a comment left of it ends the def).
        if (in_def == InDef::Body && !body_closed) {
          if (token_line || start - line_start >= body_indent) {
            token(start, i, false);
          } else {
            body_closed = true;
          }
        }
      } else if (c == '"' || c == '\'') {
        const size_t start = i;
        i = skip_string(text, i);
        token(start, i, new_line && !token_line);
        token_line = true;
      } else if (c == '\\' && i + 1 < text.size() &&
                 (text[i + 1] == '\n' ||
                  (text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n'))) {
        continued = true;
        i += text[i + 1] == '\n' ? 1 : 2;
      } else {
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        if (c == ':' && depth == 0 && in_def == InDef::Header) {
          in_def = InDef::Colon;
          token_end = i + 1;
        } else if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && !units.empty()) {
          token(i, i + 1, new_line && !token_line);
          token_line = true;
        }
        ++i;
      }
    }
    if (i < text.size()) ++i;  // the newline
  }
  if (!units.empty()) end_unit(text.size());
  return units;
}

}  // namespace mk::syntax
