// Where kernels run, chosen the same way by the CLI and the language server: host names (several
// make a pool that shares the work), the host definitions they refer to (a hosts file or the
// editor's maxkernel.hosts) and the local interpreter. Opening the choice finds the worker bundle
// and builds the HostPool; nothing here knows LSP.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tpu/host/host_config.h"
#include "tpu/host/host_pool.h"

namespace mk::service {

struct HostChoice {
  std::vector<std::string> names;        // empty: {"local"}
  std::vector<std::string> definitions;  // one JSON host object each (docs/hosts.md)
  std::string definitions_origin;        // "--hosts FILE", "maxkernel.hosts": for messages
  std::string local_python;              // "" = tpu::default_local_python()
  std::optional<std::chrono::milliseconds> request_timeout;  // unset: the host's own default
};

// Adds the names of one value ("a" or "a,b"; spaces around names ignored) to `names`, skipping
// repeats. False with `error` for an empty name ("a,,b", ",").
bool add_host_names(const std::string& value, std::vector<std::string>& names, std::string& error);

// Reads a hosts file (a JSON list of host objects, or {"hosts": [...]}) into `choice`.
bool read_hosts_file(const std::string& path, HostChoice& choice, std::string& error);

// The config of one named host: its definition, else a `ray:ADDRESS` name's ray host, else the
// built-in "local". A local or ray host without its own "python" runs the choice's interpreter
// (a ray host's python is the driver's, on this machine).
std::optional<tpu::HostConfig> host_config(const HostChoice& choice, const std::string& name,
                                           std::string& error);

// Builds the pool (the worker bundle found and hashed once). With several hosts and `verify`,
// every host is asked first: unreachable ones are set aside (HostPool::set_aside), and a pool
// whose hosts report different devices is refused (timings of different chips must not be
// mixed); `no_host_answered` then tells the two failures apart.
std::unique_ptr<tpu::HostPool> open_hosts(const HostChoice& choice, bool verify, std::string& error,
                                          bool* no_host_answered = nullptr);

}  // namespace mk::service
