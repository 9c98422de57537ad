#include "source/text/text_document.h"

#include <utility>

namespace mk::text {

TextDocument::TextDocument(std::string uri, int64_t version, std::string text)
    : uri_(std::move(uri)), version_(version), text_(std::move(text)), lines_(text_) {}

ByteEdit TextDocument::apply_change(const Utf16Range& range, std::string_view new_text) {
  size_t start = offset_of(range.start);
  size_t end = offset_of(range.end);
  if (end < start) std::swap(start, end);  // a reversed range from a confused client

  ByteEdit edit;
  edit.start_byte = static_cast<uint32_t>(start);
  edit.old_end_byte = static_cast<uint32_t>(end);
  edit.start_point = lines_.point_of(text_, start);
  edit.old_end_point = lines_.point_of(text_, end);

  text_.replace(start, end - start, new_text);
  lines_.apply_edit(text_, start, end, start + new_text.size());

  edit.new_end_byte = static_cast<uint32_t>(start + new_text.size());
  edit.new_end_point = lines_.point_of(text_, edit.new_end_byte);
  return edit;
}

void TextDocument::replace_all(std::string text) {
  text_ = std::move(text);
  lines_ = LineIndex(text_);
}

}  // namespace mk::text
