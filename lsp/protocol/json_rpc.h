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

  ParamReader object(const char* key) const;
  std::optional<ParamReader> optional_object(const char* key) const;
  std::string string(const char* key) const;
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
  const json& value_;
  std::string path_;
};

std::string json_type_name(const json& value);

}  // namespace mk::rpc
