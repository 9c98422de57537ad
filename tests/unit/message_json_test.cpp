// parse_message: a large body's long string decoded on its own must give exactly json::parse's
// value, and exactly its parse_error when the body is not JSON.
#include "lsp/protocol/message_json.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "lsp/protocol/json_rpc.h"
#include "utf8_samples.h"

namespace mk::rpc {
namespace {

namespace samples = mk::text::samples;

// About 100 KB of Python-like text with every character class a document holds.
std::string big_text() {
  std::string line = "def kernel(x_ref, o_ref):  # \"quoted\" \\ back\tslash / " + samples::kE +
                     samples::kSun + samples::kSmile + "\r\n";
  line += std::string(1, '\x01') + std::string(1, '\x1f') + "\b\f\n";
  std::string text;
  while (text.size() < 100 * 1024) text += line;
  return text;
}

json did_open(const std::string& text) {
  return {
      {"jsonrpc", "2.0"},
      {"method", "textDocument/didOpen"},
      {"params",
       {{"textDocument",
         {{"uri", "file:///w/k.py"}, {"languageId", "python"}, {"version", 1}, {"text", text}}}}}};
}

void expect_same_as_json_parse(const std::string& body) {
  const json fast = parse_message(body);
  const json plain = json::parse(body);
  EXPECT_EQ(fast, plain);
}

TEST(ParseMessage, ALargeDidOpenGivesJsonParsesValue) {
  const json message = did_open(big_text());
  expect_same_as_json_parse(message.dump());
  // Every non-ASCII character and control character as a \u escape, with surrogate pairs.
  expect_same_as_json_parse(message.dump(-1, ' ', /*ensure_ascii=*/true));
  expect_same_as_json_parse(message.dump(2));
  EXPECT_EQ(parse_message(message.dump())["params"]["textDocument"]["text"], big_text());
}

TEST(ParseMessage, EscapesSpelledEveryWayDecodeAsJsonDoes) {
  std::string literal;
  while (literal.size() < 80 * 1024)
    literal += R"(a\"b\\c\/d\be\ff\ng\rh\ti\u00e9\u65E5\ud83d\ude00\u0041)" + samples::kSmile;
  const std::string body = R"({"jsonrpc":"2.0","method":"m","params":{"text":")" + literal +
                           R"(","other":"\u0000maxkernel"}})";
  expect_same_as_json_parse(body);
}

TEST(ParseMessage, AValueSpelledLikeThePlaceholderOrALongKeyIsKeptAsJsonParseKeepsIt) {
  const std::string text = big_text();
  // The same value as the stand-in for the long string, spelled without \u0000.
  json with_twin = did_open(text);
  with_twin["params"]["twin"] = std::string("\0maxkernel long string\0", 23);
  expect_same_as_json_parse(with_twin.dump());
  expect_same_as_json_parse(with_twin.dump(-1, ' ', true));
  // Spelled with another escape, so that only the count of equal values tells them apart.
  std::string respelled = with_twin.dump();
  const size_t twin = respelled.find("\\u0000maxkernel");
  ASSERT_NE(twin, std::string::npos);
  respelled.replace(twin, std::string_view("\\u0000maxkernel").size(), "\\u0000\\u006daxkernel");
  EXPECT_EQ(json::parse(respelled)["params"]["twin"], with_twin["params"]["twin"]);
  expect_same_as_json_parse(respelled);
  // The long string is a key.
  json keyed = {{"jsonrpc", "2.0"}, {"method", "m"}, {"params", {{text, 1}}}};
  expect_same_as_json_parse(keyed.dump());
  // Two long strings, the longer one second, in an array.
  json two = {{"params", json::array({text, text + "tail"})}};
  expect_same_as_json_parse(two.dump());
}

TEST(ParseMessage, InvalidBodiesThrowParseErrorAsJsonParseDoes) {
  const std::string good = did_open(big_text()).dump();
  const size_t at = good.find("def kernel");
  ASSERT_NE(at, std::string::npos);
  const auto with = [&](const std::string& inserted) {
    return good.substr(0, at) + inserted + good.substr(at);
  };
  const std::string bodies[] = {
      with("\\ud800 lone high"),       // a high surrogate with no low one
      with("\\udc00 lone low"),        // a low surrogate first
      with("\\ud800\\u0041"),          // a high surrogate and no low one after it
      with("\xC3("),                   // a broken two-byte sequence
      with("\xC0\xAF"),                // an overlong slash
      with("\xED\xA0\x80"),            // a surrogate in UTF-8
      with("\xF4\x90\x80\x80"),        // past U+10FFFF
      with(std::string(1, '\x07')),    // a raw control character
      with("\\x41"),                   // no such escape
      with("\\u12G4"),                 // not hex
      good.substr(0, good.size() / 2)  // unterminated
  };
  for (const std::string& body : bodies) {
    bool plain_threw = false;
    try {
      const json ignored = json::parse(body);
      (void)ignored;
    } catch (const json::parse_error&) {
      plain_threw = true;
    }
    ASSERT_TRUE(plain_threw) << "the sample must be invalid JSON";
    EXPECT_THROW(
        {
          const json ignored = parse_message(body);
          (void)ignored;
        },
        json::parse_error);
  }
}

TEST(DecodeJsonString, RejectsWhatJsonRejectsAndDecodesTheRest) {
  std::string out;
  EXPECT_TRUE(decode_json_string(R"(plain \"q\" \u00e9)", out));
  EXPECT_EQ(out, "plain \"q\" " + samples::kE);
  EXPECT_TRUE(decode_json_string(R"(\ud83d\ude00)", out));
  EXPECT_EQ(out, samples::kSmile);
  EXPECT_FALSE(decode_json_string("trailing \\", out));
  EXPECT_FALSE(decode_json_string("raw \" quote", out));
  EXPECT_FALSE(decode_json_string("\\ud83d", out));
  EXPECT_FALSE(decode_json_string("\xE6\x97", out));  // cut short
}

}  // namespace
}  // namespace mk::rpc
