#include "lsp/protocol/json_rpc.h"

namespace mk::rpc {

json make_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error_response(const json& id, const Error& error) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", error.code}, {"message", error.message}}}};
}

json make_notification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

json make_request(const json& id, const std::string& method, json params) {
  json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) request["params"] = std::move(params);  // e.g. the refresh requests
  return request;
}

std::string json_type_name(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_unsigned()) return "unsigned integer";
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  return "object";
}

void ParamReader::fail(const std::string& key, const std::string& problem) const {
  throw RpcError(error_code::kInvalidParams,
                 path_ + (key.empty() ? "" : "." + key) + ": " + problem);
}

const json& ParamReader::field(const char* key) const {
  if (!value_.is_object()) fail("", "expected an object, got " + json_type_name(value_));
  auto it = value_.find(key);
  if (it == value_.end()) fail(key, "missing");
  return *it;
}

const json& ParamReader::raw(const char* key) const {
  return field(key);
}

const json* ParamReader::optional_raw(const char* key) const {
  if (!value_.is_object()) return nullptr;
  auto it = value_.find(key);
  return it == value_.end() || it->is_null() ? nullptr : &*it;
}

ParamReader ParamReader::object(const char* key) const {
  const json& v = field(key);
  if (!v.is_object()) fail(key, "expected an object, got " + json_type_name(v));
  return ParamReader(v, path_ + "." + key, owned_);
}

std::optional<ParamReader> ParamReader::optional_object(const char* key) const {
  const json* v = optional_raw(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) fail(key, "expected an object, got " + json_type_name(*v));
  return ParamReader(*v, path_ + "." + key, owned_);
}

std::string ParamReader::string(const char* key) const {
  const json& v = field(key);
  if (!v.is_string()) fail(key, "expected a string, got " + json_type_name(v));
  return v.get<std::string>();
}

std::string ParamReader::take_string(const char* key) const {
  const json& v = field(key);
  if (!v.is_string()) fail(key, "expected a string, got " + json_type_name(v));
  if (!owned_) return v.get<std::string>();
  // Made over a non-const json (the owned constructor), so the const here is only ours.
  return std::move(const_cast<json&>(v).get_ref<std::string&>());
}

std::optional<std::string> ParamReader::optional_string(const char* key) const {
  const json* v = optional_raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key, "expected a string, got " + json_type_name(*v));
  return v->get<std::string>();
}

int64_t ParamReader::integer(const char* key) const {
  const json& v = field(key);
  if (!v.is_number_integer()) fail(key, "expected an integer, got " + json_type_name(v));
  return v.get<int64_t>();
}

uint32_t ParamReader::unsigned_integer(const char* key) const {
  const json& v = field(key);
  if (!v.is_number_integer()) fail(key, "expected an unsigned integer, got " + json_type_name(v));
  if (v.is_number_unsigned() ? v.get<uint64_t>() > 0xFFFFFFFFull
                             : (v.get<int64_t>() < 0 || v.get<int64_t>() > 0xFFFFFFFFll)) {
    fail(key, "value " + v.dump() + " is out of range for an unsigned 32-bit integer");
  }
  return static_cast<uint32_t>(v.get<int64_t>());
}

std::optional<int64_t> ParamReader::optional_integer(const char* key) const {
  const json* v = optional_raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) fail(key, "expected an integer, got " + json_type_name(*v));
  return v->get<int64_t>();
}

}  // namespace mk::rpc
