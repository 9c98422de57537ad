#include "cli/host_selection.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace mk::cli {

namespace fs = std::filesystem;

std::optional<tpu::HostConfig> select_host(const std::string& name, const std::string& hosts_file,
                                           const std::string& python, std::string& error) {
  std::string file = hosts_file;
  if (file.empty()) {
    if (const char* env = std::getenv("MAXKERNEL_HOSTS_FILE"); env && *env) file = env;
  }
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) {
      error = "cannot read the hosts file " + file;
      return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json hosts;
    try {
      hosts = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
      error = file + ": " + e.what();
      return std::nullopt;
    }
    if (hosts.is_object() && hosts.contains("hosts")) hosts = hosts["hosts"];
    if (!hosts.is_array()) {
      error = file + ": expected a list of hosts";
      return std::nullopt;
    }
    for (const auto& h : hosts) {
      if (h.is_object() && h.value("name", std::string()) == name) {
        auto config = tpu::parse_host_config(h.dump(), error);
        if (config && config->kind == tpu::HostKind::Local && !h.contains("python")) {
          config->python = python.empty() ? tpu::default_local_python() : python;
        }
        return config;
      }
    }
  }
  if (name == "local") {
    tpu::HostConfig local;
    local.python = python.empty() ? tpu::default_local_python() : python;
    return local;
  }
  error = "unknown host '" + name + "'" +
          (file.empty() ? " (no hosts file given: --hosts FILE)" : " in " + file);
  return std::nullopt;
}

bool add_host_names(const std::string& value, std::vector<std::string>& names, std::string& error) {
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    std::string name = value.substr(start, comma == std::string::npos ? comma : comma - start);
    const size_t first = name.find_first_not_of(" \t");
    const size_t last = name.find_last_not_of(" \t");
    name = first == std::string::npos ? "" : name.substr(first, last - first + 1);
    if (name.empty()) {
      error = "--host '" + value + "': empty host name (use --host a,b)";
      return false;
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

}  // namespace mk::cli
