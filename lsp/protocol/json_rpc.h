// JSON-RPC 2.0 message shapes, error codes, and a params reader that reports JSON paths.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace mk::rpc {

using json = nlohmann::json;

namespace error_code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerNotInitialized = -32002;
inline constexpr int kRequestFailed = -32803;
inline constexpr int kContentModified = -32801;
inline constexpr int kRequestCancelled = -32800;
}  // namespace error_code

struct Error {
  int code = error_code::kInternalError;
  std::string message;
};

// Thrown by handlers (and ParamReader) to answer a request with an error.
class RpcError : public std::runtime_error {
 public:
  RpcError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

json make_response(const json& id, json result);
json make_error_response(const json& id, const Error& error);
json make_notification(const std::string& method, json params);
json make_request(const json& id, const std::string& method, json params);

// Reads typed fields from params; a missing or mistyped field throws InvalidParams naming its
// path, e.g. "params.position.line: expected an unsigned integer, got string".
class ParamReader {
 public:
  explicit ParamReader(const json& value, std::string path = "params")
      : value_(value), path_(std::move(path)) {}
  // Over a message the caller owns and reads once: take_string may move strings out of it.
  explicit ParamReader(json& value, std::string path = "params")
      : value_(value), path_(std::move(path)), owned_(true) {}

  ParamReader object(const char* key) const;
  std::optional<ParamReader> optional_object(const char* key) const;
  std::string string(const char* key) const;
  // As string(), but moved out of an owned message (a document's text is not copied); the field
  // reads as empty afterwards.
  std::string take_string(const char* key) const;
  std::optional<std::string> optional_string(const char* key) const;
  int64_t integer(const char* key) const;
  uint32_t unsigned_integer(const char* key) const;
  std::optional<int64_t> optional_integer(const char* key) const;
  const json& raw(const char* key) const;  // required, any type
  const json* optional_raw(const char* key) const;
  const json& value() const { return value_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

 private:
  const json& field(const char* key) const;
  ParamReader(const json& value, std::string path, bool owned)
      : value_(value), path_(std::move(path)), owned_(owned) {}
  const json& value_;
  std::string path_;
  bool owned_ = false;  // value_ is a json the caller lets us change
};

std::string json_type_name(const json& value);

}  // namespace mk::rpc
