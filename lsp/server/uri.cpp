#include "lsp/server/uri.h"

#include <cctype>
#include <cstdio>
#include <string_view>

namespace mk::server {

namespace {

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::string file_uri(const std::filesystem::path& path) {
  std::string out = "file://";
  for (const unsigned char c : path.string()) {
    if (std::isalnum(c) ||
        std::string_view("/-._~").find(static_cast<char>(c)) != std::string_view::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::optional<std::filesystem::path> path_of_uri(const std::string& uri) {
  if (!uri.starts_with("file://")) return std::nullopt;
  return std::filesystem::path(percent_decode(uri.substr(7)));
}

}  // namespace mk::server
