#include "agents/llm/sse_parser.h"

namespace mk::llm {

void SseParser::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      skip_lf_ = c == '\r';
      std::string text = std::move(pending_);
      pending_.clear();
      line(text);
    } else {
      pending_ += c;
    }
  }
}

void SseParser::finish() {
  if (!pending_.empty()) {
    std::string text = std::move(pending_);
    pending_.clear();
    line(text);
  }
  dispatch();
}

void SseParser::line(std::string_view text) {
  if (text.empty()) {
    dispatch();
    return;
  }
  if (text.front() == ':') return;  // a comment / keep-alive
  size_t colon = text.find(':');
  std::string_view field = text.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) current_.data += '\n';
    current_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    current_.event = std::string(value);
  }
  // id: and retry: do not matter to a single request's stream.
}

void SseParser::dispatch() {
  if (has_data_) {
    SseEvent event = std::move(current_);
    current_ = {};
    has_data_ = false;
    on_event_(event);
  } else {
    current_ = {};
  }
}

}  // namespace mk::llm
