// A message body read into JSON. A didOpen or full-text didChange of a large file is one long
// string in a small object; nlohmann's lexer takes about 6 ns a byte for it (2 ms for 300 KB,
// all of it before the open can start), so that one string is decoded on its own, a run of plain
// bytes at a time, and the small rest parsed as usual.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace mk::rpc {

// The same value json::parse(body) gives, and the same parse_error when the body is not valid
// JSON (any doubt about the long string sends the whole body through json::parse).
nlohmann::json parse_message(std::string_view body);

// Only the decoding of one string literal's contents (between its quotes): false when it is not
// valid JSON (a bad escape, a lone surrogate, a raw control character, invalid UTF-8).
bool decode_json_string(std::string_view literal, std::string& out);

}  // namespace mk::rpc
