// How to reach a kernel host: the local python, ssh, a command template (e.g. gcloud ssh), or a
// Ray cluster (one local driver per slot, each serving the worker protocol from an actor).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace mk::tpu {

enum class HostKind { Local, Ssh, Command, Ray };

struct HostConfig {
  std::string name = "local";
  HostKind kind = HostKind::Local;
  std::string python = "python3";  // on the host
  // ssh
  std::string destination;  // user@host
  int port = 0;
  std::string identity_file;
  std::vector<std::string> ssh_options;  // extra "-o" values, e.g. "StrictHostKeyChecking=no"
  int connect_timeout_s = 10;
  // command: argv with one element containing "{command}", replaced by the quoted remote command
  std::vector<std::string> command_template;
  // ray: what ray.init(address=...) accepts (HOST:PORT, ray://HOST:PORT, auto), and the
  // resource a timing actor holds one of (TPU on a TPU cluster, GPU on a GPU one).
  std::string address;
  std::string device_resource = "TPU";
  // where the worker is installed on a remote host, relative to the login directory
  std::string remote_dir = ".cache/maxkernel";
  // pool
  int compile_slots = 2;  // workers for lowering (parallel)
  // Workers for evaluate/profile/autotune. 0 = automatic, decided from the first worker's hello:
  // one per device on tpu/gpu (timings must not disturb each other); on a cpu host (interpret
  // mode, whose times are never a speedup) as many as compile_slots, capped at the host's cores.
  int timing_slots = 0;
  // Scheduling priority of the workers (nice increment, 0-19). The local host's workers share
  // the editor's cores: running them niced keeps hover and diagnostics responsive while kernels
  // compile. Remote hosts default to 0 (nothing of the editor's runs there).
  std::optional<int> worker_nice;  // unset: 10 for local, 0 otherwise
  int effective_worker_nice() const {
    return worker_nice.value_or(kind == HostKind::Local ? 10 : 0);
  }
  std::chrono::milliseconds request_timeout{300000};
  std::chrono::milliseconds start_timeout{60000};
};

// Parses a host from settings JSON text: {"name", "kind": "local"|"ssh"|"command"|"ray", ...}.
// Returns nullopt and fills `error` for invalid input.
std::optional<HostConfig> parse_host_config(const std::string& json_text, std::string& error);

// The host `ray:ADDRESS` names without a definition (the CLI's --host, the editor's
// maxkernel.host); nullopt for any other name.
std::optional<HostConfig> ray_host_from_name(const std::string& name);

// The python with JAX for the local host: $MAXKERNEL_PYTHON, else the repository's .venv next to
// the running binary (build/bin/../../.venv), else python3.
std::string default_local_python();

// Quotes one argument for a POSIX shell: 'it'\''s'.
std::string shell_quote(const std::string& arg);
// Joins arguments into one shell command line, each quoted.
std::string shell_command(const std::vector<std::string>& argv);

// The local argv that runs `remote_command` on the host (ssh or command template).
std::vector<std::string> remote_argv(const HostConfig& host, const std::string& remote_command);

}  // namespace mk::tpu
