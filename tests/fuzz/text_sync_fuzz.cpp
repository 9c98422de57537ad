// Fuzzes incremental text sync: the input becomes a document and a sequence of LSP range edits
// (UTF-16 positions, with non-ASCII, surrogate pairs, CRLF and lone CR). After every edit:
//  - TextDocument's text equals the same edit applied to a plain std::u16string model;
//  - the ByteEdit it returns matches the model (bytes and tree-sitter rows/columns);
//  - the incrementally reparsed tree equals a fresh parse of the new text (when that parse has
//    no syntax error: error recovery may legitimately differ).
// Position semantics the model spells out (docs/lsp.md): lines end at "\n", "\r\n" or "\r"; a
// character past the line's end clamps to the end; a line past the last one means the end of
// the text; a position inside a surrogate pair rounds down to the pair's start; a reversed range
// is swapped.
#include <fuzzer/FuzzedDataProvider.h>
#include <tree_sitter/api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "source/syntax/python_tree.h"
#include "source/text/text_document.h"

namespace {

using mk::text::Utf16Position;

// Pieces a document is built from: ASCII, Python punctuation, 2-, 3- and 4-byte UTF-8 (the last
// a surrogate pair in UTF-16), and every line terminator.
const std::u16string kPieces[] = {u"a",
                                  u"x1",
                                  u" ",
                                  u"\t",
                                  u"\n",
                                  u"\r",
                                  u"\r\n",
                                  u"(",
                                  u")",
                                  u":",
                                  u"def f",
                                  u"    ",
                                  u"#",
                                  u"\"",
                                  u"\u00e9",
                                  u"\u20ac",
                                  u"\U0001F600",
                                  u"\U00010348",
                                  u"pl.pallas_call(",
                                  u"=",
                                  u",",
                                  u"'"};

std::u16string random_text(FuzzedDataProvider& in, size_t max_pieces) {
  std::u16string out;
  const size_t n = in.ConsumeIntegralInRange<size_t>(0, max_pieces);
  for (size_t i = 0; i < n && in.remaining_bytes() > 0; ++i)
    out += kPieces[in.ConsumeIntegralInRange<size_t>(0, std::size(kPieces) - 1)];
  return out;
}

std::string to_utf8(const std::u16string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    uint32_t cp = s[i];
    if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < s.size()) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (s[i + 1] - 0xDC00);
      ++i;
    }
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
  return out;
}

// The model's offset (in UTF-16 units) of an LSP position.
size_t model_offset(const std::u16string& s, Utf16Position p) {
  size_t line = 0, start = 0;
  while (line < p.line) {
    size_t i = start;
    while (i < s.size() && s[i] != u'\n' && s[i] != u'\r') ++i;
    if (i == s.size()) return s.size();  // past the last line
    start = (s[i] == u'\r' && i + 1 < s.size() && s[i + 1] == u'\n') ? i + 2 : i + 1;
    ++line;
  }
  size_t end = start;
  while (end < s.size() && s[end] != u'\n' && s[end] != u'\r') ++end;
  size_t at = start + std::min<size_t>(p.character, end - start);
  if (at > start && at < s.size() && s[at] >= 0xDC00 && s[at] < 0xE000) --at;
  return at;
}

struct Point {
  uint32_t row, column;
};
// Tree-sitter's point of a UTF-8 byte offset: rows split at '\n' only, columns in bytes.
Point point_of(const std::string& utf8, size_t offset) {
  Point p{0, 0};
  for (size_t i = 0; i < offset; ++i) {
    if (utf8[i] == '\n') {
      ++p.row;
      p.column = 0;
    } else {
      ++p.column;
    }
  }
  return p;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "text sync property violated: %s\n", what);
    std::abort();
  }
}

void check_point(const mk::text::BytePoint& got, Point want, const char* what) {
  check(got.row == want.row && got.column == want.column, what);
}

std::string tree_text(const mk::syntax::PythonTree& tree) {
  std::unique_ptr<char, decltype(&std::free)> s(ts_node_string(tree.root()), &std::free);
  return s.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::u16string model = random_text(in, 64);
  mk::text::TextDocument doc("file:///fuzz.py", 0, to_utf8(model));
  mk::syntax::PythonTree tree;
  tree.parse(doc.text());
  for (int step = 0; step < 32 && in.remaining_bytes() > 0; ++step) {
    const uint32_t lines = doc.lines().line_count();
    auto position = [&] {
      // Mostly inside the text, sometimes far past the end of a line or of the document.
      const bool wild = in.ConsumeIntegralInRange(0, 7) == 0;
      const uint32_t line = in.ConsumeIntegralInRange<uint32_t>(0, wild ? UINT32_MAX : lines);
      const uint32_t character = in.ConsumeIntegralInRange<uint32_t>(0, wild ? UINT32_MAX : 24);
      return Utf16Position{line, character};
    };
    const mk::text::Utf16Range range{position(), position()};
    const std::u16string inserted = random_text(in, 6);
    const std::string inserted_utf8 = to_utf8(inserted);

    size_t from = model_offset(model, range.start);
    size_t to = model_offset(model, range.end);
    if (to < from) std::swap(from, to);
    const std::string before = to_utf8(model);
    const size_t start_byte = to_utf8(model.substr(0, from)).size();
    const size_t old_end_byte = to_utf8(model.substr(0, to)).size();
    model.replace(from, to - from, inserted);
    const std::string after = to_utf8(model);

    const mk::text::ByteEdit edit = doc.apply_change(range, inserted_utf8);
    check(doc.text() == after, "document text differs from the UTF-16 model");
    check(edit.start_byte == start_byte, "ByteEdit.start_byte");
    check(edit.old_end_byte == old_end_byte, "ByteEdit.old_end_byte");
    check(edit.new_end_byte == start_byte + inserted_utf8.size(), "ByteEdit.new_end_byte");
    check_point(edit.start_point, point_of(before, start_byte), "ByteEdit.start_point");
    check_point(edit.old_end_point, point_of(before, old_end_byte), "ByteEdit.old_end_point");
    check_point(edit.new_end_point, point_of(after, edit.new_end_byte), "ByteEdit.new_end_point");

    tree.edit_and_reparse(edit, doc.text());
    mk::syntax::PythonTree fresh;
    fresh.parse(doc.text());
    // Error recovery may legitimately differ between the two; a valid program may not.
    if (!fresh.has_error())
      check(tree_text(tree) == tree_text(fresh), "incremental reparse differs from a fresh parse");
  }
  return 0;
}
