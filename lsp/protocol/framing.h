// LSP base protocol: Content-Length framed messages over a byte stream.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace mk::rpc {

// Where frames are read from: a file descriptor in the server, a string in tests.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` bytes; returns 0 at end of stream.
  virtual size_t read(char* buffer, size_t n) = 0;
};

class FdSource : public ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  size_t read(char* buffer, size_t n) override;

 private:
  int fd_;
};

class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string data) : data_(std::move(data)) {}
  size_t read(char* buffer, size_t n) override;

 private:
  std::string data_;
  size_t pos_ = 0;
};

class FrameReader {
 public:
  enum class Status { Message, Error, Eof };
  struct Result {
    Status status;
    std::string body;   // Message: the JSON text
    std::string error;  // Error (and Eof after a truncated message): what was wrong
  };

  explicit FrameReader(ByteSource& source, size_t max_body_bytes = 64u << 20)
      : source_(source), max_body_bytes_(max_body_bytes) {}

  // The next message, a recoverable framing error (the reader resynchronises on the next
  // Content-Length header), or the end of the stream.
  Result next();

 private:
  bool fill();                        // reads more bytes; false at EOF
  bool read_line(std::string& line);  // one header line without its terminator
  bool read_exact(std::string& out, size_t n);
  bool skip_exact(size_t n);

  ByteSource& source_;
  size_t max_body_bytes_;
  std::string buffer_;
  size_t pos_ = 0;
  bool eof_ = false;
};

// Serialises whole frames to an output; safe to call from any thread.
class FrameWriter {
 public:
  explicit FrameWriter(std::function<void(std::string_view)> sink) : sink_(std::move(sink)) {}
  void write(std::string_view body);

 private:
  std::mutex mutex_;
  std::function<void(std::string_view)> sink_;
};

// A sink that writes to a file descriptor, retrying on partial writes and EINTR.
std::function<void(std::string_view)> fd_sink(int fd);

}  // namespace mk::rpc
