#include "lsp/protocol/framing.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

namespace mk::rpc {

namespace {

constexpr size_t kMaxHeaderLine = 8192;
constexpr std::string_view kLengthHeader = "content-length";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

size_t FdSource::read(char* buffer, size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd_, buffer, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return 0;
  }
}

size_t StringSource::read(char* buffer, size_t n) {
  const size_t take = std::min(n, data_.size() - pos_);
  std::memcpy(buffer, data_.data() + pos_, take);
  pos_ += take;
  return take;
}

bool FrameReader::fill() {
  if (eof_) return false;
  if (pos_ > 0 && pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 16)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[1 << 16];
  const size_t got = source_.read(chunk, sizeof chunk);
  if (got == 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, got);
  return true;
}

bool FrameReader::read_line(std::string& line) {
  line.clear();
  for (;;) {
    const size_t nl = buffer_.find('\n', pos_);
    if (nl != std::string::npos) {
      if (line.size() < kMaxHeaderLine)
        line.append(buffer_, pos_, std::min(nl - pos_, kMaxHeaderLine));
      pos_ = nl + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (line.size() < kMaxHeaderLine) {
      line.append(buffer_, pos_, std::min(buffer_.size() - pos_, kMaxHeaderLine - line.size()));
    }
    pos_ = buffer_.size();
    if (!fill()) return false;
  }
}

bool FrameReader::read_exact(std::string& out, size_t n) {
  out.clear();
  out.reserve(n);
  while (out.size() < n) {
    if (pos_ == buffer_.size() && !fill()) return false;
    const size_t take = std::min(n - out.size(), buffer_.size() - pos_);
    out.append(buffer_, pos_, take);
    pos_ += take;
  }
  return true;
}

bool FrameReader::skip_exact(size_t n) {
  while (n > 0) {
    if (pos_ == buffer_.size() && !fill()) return false;
    const size_t take = std::min(n, buffer_.size() - pos_);
    pos_ += take;
    n -= take;
  }
  return true;
}

FrameReader::Result FrameReader::next() {
  std::string line;
  std::string junk_note;
  // Find the start of a header block: skip blank lines and anything before "Content-Length".
  for (;;) {
    if (!read_line(line)) {
      if (!line.empty() || !junk_note.empty())
        return {Status::Eof, "", "stream ended inside a header"};
      return {Status::Eof, "", ""};
    }
    if (trim(line).empty()) continue;
    const std::string low = lower(line);
    const size_t at = low.find(kLengthHeader);
    if (at == std::string::npos && low.find("content-type") != 0) {
      junk_note = "skipped bytes that are not an LSP header";
      continue;
    }
    if (at != std::string::npos && at > 0) {
      junk_note = "skipped bytes before a Content-Length header";
      line.erase(0, at);
    }
    break;
  }
  // Read the rest of the header block.
  std::optional<size_t> length;
  std::string length_error;
  for (;;) {
    const std::string_view l = trim(line);
    if (l.empty()) break;
    const size_t colon = l.find(':');
    if (colon != std::string_view::npos && lower(trim(l.substr(0, colon))) == kLengthHeader) {
      const std::string_view value = trim(l.substr(colon + 1));
      size_t n = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
        length_error = "invalid Content-Length '" + std::string(value) + "'";
      } else {
        length = n;
      }
    }
    if (!read_line(line)) return {Status::Eof, "", "stream ended inside a header"};
  }
  if (!length) {
    return {Status::Error, "",
            length_error.empty() ? "header without Content-Length" : length_error};
  }
  if (*length > max_body_bytes_) {
    if (!skip_exact(*length)) return {Status::Eof, "", "stream ended inside an oversized message"};
    return {Status::Error, "",
            "message of " + std::to_string(*length) + " bytes exceeds the limit of " +
                std::to_string(max_body_bytes_) + " bytes; dropped"};
  }
  std::string body;
  if (!read_exact(body, *length)) {
    return {Status::Eof, "",
            "stream ended after " + std::to_string(body.size()) + " of " + std::to_string(*length) +
                " body bytes"};
  }
  return {Status::Message, std::move(body), junk_note};
}

void FrameWriter::write(std::string_view body) {
  std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  frame.append(body);
  std::lock_guard<std::mutex> lock(mutex_);
  sink_(frame);
}

std::function<void(std::string_view)> fd_sink(int fd) {
  return [fd](std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return;  // the client is gone; the reader will see EOF and stop the server
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  };
}

}  // namespace mk::rpc
