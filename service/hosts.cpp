#include "service/hosts.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tpu/host/worker_bundle.h"

namespace mk::service {

bool add_host_names(const std::string& value, std::vector<std::string>& names, std::string& error) {
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    std::string name = value.substr(start, comma == std::string::npos ? comma : comma - start);
    const size_t first = name.find_first_not_of(" \t");
    const size_t last = name.find_last_not_of(" \t");
    name = first == std::string::npos ? "" : name.substr(first, last - first + 1);
    if (name.empty()) {
      error = "host list '" + value + "': empty host name (write a,b)";
      return false;
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

bool read_hosts_file(const std::string& path, HostChoice& choice, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read the hosts file " + path;
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json hosts;
  try {
    hosts = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    error = path + ": " + e.what();
    return false;
  }
  if (hosts.is_object() && hosts.contains("hosts")) hosts = hosts["hosts"];
  if (!hosts.is_array()) {
    error = path + ": expected a list of hosts";
    return false;
  }
  for (const nlohmann::json& h : hosts) choice.definitions.push_back(h.dump());
  choice.definitions_origin = path;
  return true;
}

std::optional<tpu::HostConfig> host_config(const HostChoice& choice, const std::string& name,
                                           std::string& error) {
  const std::string python =
      choice.local_python.empty() ? tpu::default_local_python() : choice.local_python;
  for (const std::string& text : choice.definitions) {
    const nlohmann::json h = nlohmann::json::parse(text, nullptr, false);
    if (!h.is_object() || h.value("name", std::string()) != name) continue;
    auto config = tpu::parse_host_config(text, error);
    // A host whose python runs here (local; ray: the driver's) gets this machine's.
    if (config && config->kind->python_runs_here() && !h.contains("python"))
      config->python = python;
    if (config && choice.request_timeout) config->request_timeout = *choice.request_timeout;
    return config;
  }
  // Hosts without a definition: a `ray:ADDRESS` name, or "local"; both run the choice's python.
  std::optional<tpu::HostConfig> builtin = tpu::ray_host_from_name(name);
  if (!builtin && name == "local") builtin = tpu::HostConfig{};
  if (builtin) {
    builtin->python = python;
    if (choice.request_timeout) builtin->request_timeout = *choice.request_timeout;
    return builtin;
  }
  error =
      "unknown host '" + name + "'" +
      (choice.definitions_origin.empty() ? " (no host definitions: --hosts FILE or maxkernel.hosts)"
                                         : " in " + choice.definitions_origin);
  return std::nullopt;
}

std::unique_ptr<tpu::HostPool> open_hosts(const HostChoice& choice, bool verify, std::string& error,
                                          bool* no_host_answered) {
  if (no_host_answered) *no_host_answered = false;
  const std::vector<std::string> names =
      choice.names.empty() ? std::vector<std::string>{"local"} : choice.names;
  std::vector<tpu::HostConfig> configs;
  for (const std::string& name : names) {
    auto config = host_config(choice, name, error);
    if (!config) return nullptr;
    configs.push_back(std::move(*config));
  }
  auto worker_dir = tpu::find_worker_directory();
  if (!worker_dir) {
    error = "cannot find the worker (tpu/worker); set MAXKERNEL_WORKER_DIR";
    return nullptr;
  }
  auto bundle = tpu::load_worker_bundle(*worker_dir, error);
  if (!bundle) return nullptr;
  auto pool = std::make_unique<tpu::HostPool>();
  for (const tpu::HostConfig& config : configs)
    pool->add(std::make_unique<tpu::KernelHost>(config, *bundle));
  if (verify && pool->size() > 1 && !pool->verify(error)) {
    if (no_host_answered) *no_host_answered = !pool->devices_differ();
    pool->shutdown();
    return nullptr;
  }
  return pool;
}

}  // namespace mk::service
