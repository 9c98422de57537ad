#include "tpu/host/host_kind.h"

#include <stdexcept>

#include "tpu/host/host_config.h"

namespace mk::tpu {

void HostKind::read_settings(const nlohmann::json&, HostConfig&) const {}

std::string HostKind::check_settings(const HostConfig&) const {
  return "";
}

std::vector<std::string> HostKind::remote_shell(const HostConfig&, const std::string&) const {
  throw std::logic_error("the host kind " + std::string(name()) + " has no remote shell");
}

std::vector<std::string> HostKind::worker_argv(const HostConfig& host, const WorkerBundle& bundle,
                                               Lane lane) const {
  const bool remote = has_remote_shell();
  const std::string script = remote ? installed_bundle_dir(host, bundle) + "/" + bundle.entry
                                    : (bundle.directory / bundle.entry).string();
  // A compile worker keeps JAX on the CPU: a TPU admits one process, the timing worker's.
  std::vector<std::string> argv = {host.python,
                                   "-u",
                                   script,
                                   "--nice",
                                   std::to_string(host.effective_worker_nice()),
                                   "--lane",
                                   lane == Lane::Compile ? "compile" : "timing"};
  if (!remote) return argv;
  return remote_shell(host, shell_command(argv));
}

std::string HostKind::explain_connection_failure(const std::string& err) const {
  auto has = [&](const char* s) { return err.find(s) != std::string::npos; };
  if (has("Permission denied") || has("Authentication failed"))
    return "ssh authentication failed (check the key and user)";
  if (has("Connection refused")) return "connection refused (is sshd running on that port?)";
  if (has("timed out")) return "connection timed out";
  if (has("Could not resolve hostname") || has("Name or service not known"))
    return "unknown host name";
  if (has("Host key verification failed"))
    return "host key verification failed (add the host to known_hosts)";
  if (has("No such file or directory") || has("not found"))
    return "the python on the host was not found";
  return "";
}

std::string installed_bundle_dir(const HostConfig& host, const WorkerBundle& bundle) {
  return host.remote_dir + "/worker-" + bundle.hash.substr(0, 16);
}

}  // namespace mk::tpu
