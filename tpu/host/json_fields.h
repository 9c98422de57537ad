// Reads of JSON that may lack any field or hold another type there, without throwing: worker
// replies (the wire format may grow or an old worker may answer) and the records built from them.
// Each read says what a missing, mistyped or non-object value gives.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mk::tpu {

// The value at `key`; a null value when `j` is not an object or has no such key.
inline const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json none;
  if (!j.is_object()) return none;
  const auto it = j.find(key);
  return it == j.end() ? none : *it;
}

// The number at `key`, nullopt when it is not a number.
inline std::optional<double> number_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = field(j, key);
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

// The finite number at `key`, else `fallback`.
inline double number_or(const nlohmann::json& j, const char* key, double fallback = 0) {
  const std::optional<double> v = number_at(j, key);
  return v && std::isfinite(*v) ? *v : fallback;
}

// The integer at `key` (a finite float truncates), else `fallback`.
inline int64_t integer_or(const nlohmann::json& j, const char* key, int64_t fallback = 0) {
  const nlohmann::json& v = field(j, key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_number()) return fallback;
  const double d = v.get<double>();
  return std::isfinite(d) ? static_cast<int64_t>(d) : fallback;
}

// The string at `key`, else `fallback`.
inline std::string text_at(const nlohmann::json& j, const char* key,
                           const std::string& fallback = "") {
  const nlohmann::json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

// The object at `key`, else an empty object.
inline nlohmann::json object_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = field(j, key);
  return v.is_object() ? v : nlohmann::json::object();
}

}  // namespace mk::tpu
