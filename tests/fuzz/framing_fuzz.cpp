// Fuzzes the Content-Length framing. Two properties:
//  raw:        whatever bytes arrive, in whatever chunks, FrameReader ends at Eof after a bounded
//              number of results and never returns a body larger than its limit;
//  round trip: bodies written by FrameWriter read back exactly, in order, however the stream is
//              chunked and whatever junk (not a header) precedes a frame.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lsp/protocol/framing.h"

namespace {

// Hands out the data in the chunk sizes the fuzzer chose (cycled), like a pipe would.
class ChunkedSource : public mk::rpc::ByteSource {
 public:
  ChunkedSource(std::string data, std::vector<uint8_t> chunks)
      : data_(std::move(data)), chunks_(std::move(chunks)) {
    if (chunks_.empty()) chunks_.push_back(0);
  }
  size_t read(char* buffer, size_t n) override {
    const size_t want = chunks_[next_++ % chunks_.size()] + size_t{1};
    const size_t take = std::min({n, want, data_.size() - pos_});
    std::memcpy(buffer, data_.data() + pos_, take);
    pos_ += take;
    return take;
  }

 private:
  std::string data_;
  std::vector<uint8_t> chunks_;
  size_t pos_ = 0;
  size_t next_ = 0;
};

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "framing property violated: %s\n", what);
    std::abort();
  }
}

void raw_stream(FuzzedDataProvider& in) {
  const size_t limit = in.ConsumeIntegralInRange<size_t>(0, 4096);
  std::vector<uint8_t> chunks = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange(0, 8));
  std::string data = in.ConsumeRemainingBytesAsString();
  const size_t size = data.size();
  ChunkedSource source(std::move(data), std::move(chunks));
  mk::rpc::FrameReader reader(source, limit);
  size_t results = 0;
  for (;;) {
    const auto r = reader.next();
    if (r.status == mk::rpc::FrameReader::Status::Eof) break;
    ++results;
    // Every non-final result consumes at least one header line, so results are bounded.
    check(results <= size + 1, "more results than input bytes");
    if (r.status == mk::rpc::FrameReader::Status::Message) {
      check(r.body.size() <= limit, "a body over the limit was returned");
    } else {
      check(!r.error.empty(), "an error without a reason");
    }
  }
  check(reader.next().status == mk::rpc::FrameReader::Status::Eof, "Eof is not sticky");
}

void round_trip(FuzzedDataProvider& in) {
  std::vector<uint8_t> chunks = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange(0, 8));
  std::vector<std::string> bodies;
  std::string stream;
  mk::rpc::FrameWriter writer([&](std::string_view frame) { stream.append(frame); });
  while (in.remaining_bytes() > 0 && bodies.size() < 64) {
    if (in.ConsumeBool()) {
      // Junk between frames: text without a newline-terminated header, then a newline. The
      // reader skips it (it names no Content-Length), so the next frame must still arrive.
      std::string junk = in.ConsumeRandomLengthString(32);
      std::erase(junk, '\n');
      std::string lowered = junk;
      std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lowered.find("content-") == std::string::npos &&
          lowered.find_first_not_of(" \t\r") != std::string::npos)
        stream += junk + "\n";
    }
    bodies.push_back(in.ConsumeRandomLengthString(256));
    writer.write(bodies.back());
  }
  ChunkedSource source(std::move(stream), std::move(chunks));
  mk::rpc::FrameReader reader(source);
  for (const std::string& expected : bodies) {
    const auto r = reader.next();
    check(r.status == mk::rpc::FrameReader::Status::Message, "a written frame did not read back");
    check(r.body == expected, "a body changed on the way");
  }
  check(reader.next().status == mk::rpc::FrameReader::Status::Eof, "extra frames after the last");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {
    raw_stream(in);
  } else {
    round_trip(in);
  }
  return 0;
}
