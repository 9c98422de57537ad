// FrameReader / FrameWriter: LSP base-protocol framing over a byte stream.
#include "lsp/protocol/framing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace mk::rpc {
namespace {

using Status = FrameReader::Status;

std::string frame(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Delivers its data a few bytes per read, to exercise refills in the middle of headers and bodies.
class TrickleSource : public ByteSource {
 public:
  TrickleSource(std::string data, size_t step) : data_(std::move(data)), step_(step) {}
  size_t read(char* buffer, size_t n) override {
    const size_t take = std::min({n, step_, data_.size() - pos_});
    data_.copy(buffer, take, pos_);
    pos_ += take;
    return take;
  }

 private:
  std::string data_;
  size_t step_;
  size_t pos_ = 0;
};

TEST(FrameReader, TwoMessagesBackToBack) {
  StringSource src(frame(R"({"a":1})") + frame(R"({"b":2})"));
  FrameReader reader(src);
  auto r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, R"({"a":1})");
  EXPECT_EQ(r.error, "");
  r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, R"({"b":2})");
  r = reader.next();
  EXPECT_EQ(r.status, Status::Eof);
  EXPECT_EQ(r.error, "");  // a clean end between messages
  EXPECT_EQ(reader.next().status, Status::Eof);
}

TEST(FrameReader, EmptyStreamIsCleanEof) {
  StringSource src("");
  FrameReader reader(src);
  const auto r = reader.next();
  EXPECT_EQ(r.status, Status::Eof);
  EXPECT_EQ(r.error, "");
}

TEST(FrameReader, HeaderNamesAreCaseInsensitive) {
  StringSource src(
      "content-length: 2\r\n\r\n{}CONTENT-LENGTH:3\r\n\r\n[1]Content-Length:   4  \r\n\r\nnull");
  FrameReader reader(src);
  EXPECT_EQ(reader.next().body, "{}");
  EXPECT_EQ(reader.next().body, "[1]");
  EXPECT_EQ(reader.next().body, "null");
  EXPECT_EQ(reader.next().status, Status::Eof);
}

TEST(FrameReader, ExtraContentTypeHeaderInEitherOrder) {
  StringSource src(
      "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
      "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 4\r\n\r\ntrue");
  FrameReader reader(src);
  auto r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, "{}");
  r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, "true");
}

TEST(FrameReader, BareLfHeaderLinesAreAccepted) {
  StringSource src("Content-Length: 2\n\n{}");
  FrameReader reader(src);
  const auto r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, "{}");
}

TEST(FrameReader, MissingContentLengthIsAnErrorThenRecovers) {
  StringSource src("Content-Type: application/json\r\n\r\n" + frame("{\"ok\":true}"));
  FrameReader reader(src);
  auto r = reader.next();
  EXPECT_EQ(r.status, Status::Error);
  EXPECT_NE(r.error.find("without Content-Length"), std::string::npos) << r.error;
  r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, "{\"ok\":true}");
}

TEST(FrameReader, NonNumericLengthIsAnErrorThenRecovers) {
  for (const std::string bad : {"abc", "-1", "12x", "", "1.5"}) {
    StringSource src("Content-Length: " + bad + "\r\n\r\n" + frame("[]"));
    FrameReader reader(src);
    auto r = reader.next();
    EXPECT_EQ(r.status, Status::Error) << "length '" << bad << "'";
    EXPECT_NE(r.error.find("invalid Content-Length"), std::string::npos) << r.error;
    r = reader.next();
    EXPECT_EQ(r.status, Status::Message) << "length '" << bad << "'";
    EXPECT_EQ(r.body, "[]");
  }
}

TEST(FrameReader, OversizedMessageIsSkipped) {
  const std::string big(100, 'x');
  StringSource src(frame(big) + frame("{}"));
  FrameReader reader(src, 64);
  auto r = reader.next();
  EXPECT_EQ(r.status, Status::Error);
  EXPECT_NE(r.error.find("100 bytes exceeds the limit of 64"), std::string::npos) << r.error;
  r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, "{}");
  // Exactly at the cap is fine.
  StringSource exact(frame(std::string(64, 'y')));
  FrameReader at_cap(exact, 64);
  EXPECT_EQ(at_cap.next().status, Status::Message);
}

TEST(FrameReader, OversizedMessageTruncatedAtEof) {
  StringSource src("Content-Length: 1000\r\n\r\nshort");
  FrameReader reader(src, 10);
  const auto r = reader.next();
  EXPECT_EQ(r.status, Status::Eof);
  EXPECT_FALSE(r.error.empty());
}

TEST(FrameReader, TruncatedBodyIsEofWithError) {
  StringSource src("Content-Length: 10\r\n\r\n{\"a\":");
  FrameReader reader(src);
  const auto r = reader.next();
  EXPECT_EQ(r.status, Status::Eof);
  EXPECT_NE(r.error.find("5 of 10"), std::string::npos) << r.error;
}

TEST(FrameReader, EofInsideHeaderIsEofWithError) {
  StringSource src("Content-Length: 10\r\n");
  FrameReader reader(src);
  const auto r = reader.next();
  EXPECT_EQ(r.status, Status::Eof);
  EXPECT_FALSE(r.error.empty());
}

TEST(FrameReader, JunkBeforeAHeaderIsSkipped) {
  StringSource src("garbage line\r\n\r\nmore junk" + frame("{\"x\":1}") + frame("{}"));
  FrameReader reader(src);
  auto r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, "{\"x\":1}");
  EXPECT_FALSE(r.error.empty());  // the skipped junk is reported alongside the message
  r = reader.next();
  EXPECT_EQ(r.status, Status::Message);
  EXPECT_EQ(r.body, "{}");
  EXPECT_EQ(r.error, "");
}

TEST(FrameReader, TrailingJunkAtEofIsReported) {
  StringSource src(frame("{}") + "stray bytes without newline");
  FrameReader reader(src);
  EXPECT_EQ(reader.next().status, Status::Message);
  const auto r = reader.next();
  EXPECT_EQ(r.status, Status::Eof);
  EXPECT_FALSE(r.error.empty());
}

TEST(FrameReader, SmallReadsAndLargeBodies) {
  const std::string big(200000, 'z');  // larger than one 64 KiB refill
  const std::string data = frame("{\"first\":true}") + frame(big) + frame("[\"\xC3\xA9\"]");
  for (size_t step : {1u, 3u, 7u, 4096u}) {
    TrickleSource src(data, step);
    FrameReader reader(src);
    EXPECT_EQ(reader.next().body, "{\"first\":true}") << "step " << step;
    EXPECT_EQ(reader.next().body.size(), big.size()) << "step " << step;
    const auto r = reader.next();
    EXPECT_EQ(r.body, "[\"\xC3\xA9\"]")
        << "step " << step;  // the length counts bytes, not characters
    EXPECT_EQ(reader.next().status, Status::Eof);
  }
}

TEST(FrameWriter, WritesContentLengthInBytes) {
  std::vector<std::string> out;
  FrameWriter writer([&](std::string_view s) { out.emplace_back(s); });
  writer.write("{\"s\":\"\xF0\x9F\x98\x80\"}");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], "Content-Length: 12\r\n\r\n{\"s\":\"\xF0\x9F\x98\x80\"}");
  // What the writer produces, the reader reads back.
  StringSource src(out[0]);
  FrameReader reader(src);
  EXPECT_EQ(reader.next().body, "{\"s\":\"\xF0\x9F\x98\x80\"}");
}

}  // namespace
}  // namespace mk::rpc
