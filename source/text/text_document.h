// The text of one open document, edited by LSP content changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "source/text/line_index.h"

namespace mk::text {

// The byte-level description of one edit, as tree-sitter's ts_tree_edit wants it.
struct ByteEdit {
  uint32_t start_byte = 0;
  uint32_t old_end_byte = 0;
  uint32_t new_end_byte = 0;
  BytePoint start_point;
  BytePoint old_end_point;
  BytePoint new_end_point;
};

class TextDocument {
 public:
  TextDocument(std::string uri, int64_t version, std::string text);

  const std::string& uri() const { return uri_; }
  int64_t version() const { return version_; }
  void set_version(int64_t version) { version_ = version; }
  const std::string& text() const { return text_; }
  const LineIndex& lines() const { return lines_; }

  // Replaces a UTF-16 range with new text and returns the edit in bytes (before and after).
  ByteEdit apply_change(const Utf16Range& range, std::string_view new_text);
  void replace_all(std::string text);

  Utf16Position position_of(size_t offset) const { return lines_.position_of(text_, offset); }
  size_t offset_of(Utf16Position position) const { return lines_.offset_of(text_, position); }

 private:
  std::string uri_;
  int64_t version_;
  std::string text_;
  LineIndex lines_;
};

}  // namespace mk::text
