// How to reach a kernel host: its kind (tpu/host/host_kind.h: the local python, ssh, a command
// template such as gcloud ssh, a Ray cluster, ...) and the settings of its definition.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tpu/host/host_kind.h"

namespace mk::tpu {

struct HostConfig {
  std::string name = "local";
  const HostKind* kind = &local_host_kind();  // never null
  // The definition as written (null for a host made in code): a kind whose settings have no
  // field below reads them here.
  nlohmann::json definition;
  std::string python = "python3";  // on the host
  // How long connecting to the host may take (ssh's ConnectTimeout). A start that fails faster
  // rode a dying shared connection and is tried once more (KernelHost).
  int connect_timeout_s = 10;
  // The built-in kinds' own settings, read by their HostKind::read_settings.
  // ssh (ssh_host_kind.cpp)
  std::string destination;  // user@host
  int port = 0;
  std::string identity_file;
  std::vector<std::string> ssh_options;  // extra "-o" values, e.g. "StrictHostKeyChecking=no"
  // command (command_host_kind.cpp): argv with one element containing "{command}", replaced by
  // the quoted remote command
  std::vector<std::string> command_template;
  // ray (ray_host_kind.cpp): what ray.init(address=...) accepts (HOST:PORT, ray://HOST:PORT, auto),
  // and the resource a timing actor holds one of (TPU on a TPU cluster, GPU on a GPU one).
  std::string address;
  std::string device_resource = "TPU";
  // where a kind with a remote shell installs the worker, relative to the login directory
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
  std::optional<int> worker_nice;  // unset: 10 where the workers run here, 0 otherwise
  int effective_worker_nice() const {
    return worker_nice.value_or(kind->workers_run_here() ? 10 : 0);
  }
  std::chrono::milliseconds request_timeout{300000};
  std::chrono::milliseconds start_timeout{60000};
};

// Parses a host from settings JSON text: {"name", "kind": a registered kind's name, ...}: the
// shared fields here, the kind's own in HostKind::read_settings. Returns nullopt and fills
// `error` for invalid input.
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

// The local argv that runs `remote_command` on a host whose kind has a remote shell (ssh,
// command): host.kind->remote_shell.
std::vector<std::string> remote_argv(const HostConfig& host, const std::string& remote_command);

}  // namespace mk::tpu
