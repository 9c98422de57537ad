// Server-sent events: bytes in (split anywhere), whole events out.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace mk::llm {

struct SseEvent {
  std::string event;  // the `event:` field; empty when the stream did not name one
  std::string data;   // `data:` lines joined with '\n'
};

class SseParser {
 public:
  using Handler = std::function<void(const SseEvent&)>;
  explicit SseParser(Handler on_event) : on_event_(std::move(on_event)) {}

  // Feeds raw bytes; complete lines are parsed, a partial line waits for the next chunk.
  void feed(std::string_view bytes);
  // End of stream: an event not yet closed by a blank line is dispatched if it has data.
  void finish();

 private:
  void line(std::string_view text);
  void dispatch();

  Handler on_event_;
  std::string pending_;  // bytes of a line not yet ended
  SseEvent current_;
  bool has_data_ = false;
  bool skip_lf_ = false;  // the last chunk ended in '\r': a '\n' starting the next one ends no line
};

}  // namespace mk::llm
