// A kind of kernel host (the "kind" of a host definition): how its settings are read and checked,
// how one worker is started there, whether the worker bundle is installed there first, and how a
// failed start is explained. KernelHost, HostPool, parse_host_config and service/hosts ask the
// kind; none of them names one. A new kind is one file (a HostKind) plus a line in the registry,
// host_kinds.cpp (docs/hosts.md, "Adding a host kind").
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tpu/host/job_runner.h"
#include "tpu/host/worker_bundle.h"

namespace mk::tpu {

struct HostConfig;

class HostKind {
 public:
  virtual ~HostKind() = default;

  // What a definition's "kind" says, and what messages call it.
  virtual std::string_view name() const = 0;

  // Reads the kind's own fields of a host definition into `host` (the shared ones are read
  // already). A field of the wrong type throws nlohmann::json::exception, reported like any bad
  // field. A kind whose settings have no field in HostConfig reads them from host.definition
  // where it uses them.
  virtual void read_settings(const nlohmann::json& definition, HostConfig& host) const;
  // Why `host` cannot be used ("ssh needs a destination (user@host)"), or "" when it can.
  virtual std::string check_settings(const HostConfig& host) const;

  // Whether the host is another machine reached through a remote shell: the worker bundle is
  // installed there through it before the host's first worker starts (KernelHost), and its
  // workers run from that copy. Kinds whose workers start on this machine say false.
  virtual bool has_remote_shell() const { return false; }
  // The argv, run on this machine, that runs the shell command `command` on the host (only for
  // a kind with a remote shell; others throw std::logic_error).
  virtual std::vector<std::string> remote_shell(const HostConfig& host,
                                                const std::string& command) const;

  // The argv, run on this machine, that starts one worker of `lane` speaking the worker protocol
  // on stdin/stdout. By default: the host's python on the bundle's entry, on this machine or,
  // through remote_shell, on the host's installed copy.
  virtual std::vector<std::string> worker_argv(const HostConfig& host, const WorkerBundle& bundle,
                                               Lane lane) const;

  // Whether the workers run on this machine, sharing the editor's cores: they run niced by
  // default, and a pool of such hosts lowers on save (HostPool::all_local).
  virtual bool workers_run_here() const { return false; }
  // Whether the host's python runs on this machine (the worker's or a driver's): without a
  // "python" in its definition it gets the local python (service/hosts).
  virtual bool python_runs_here() const { return workers_run_here(); }
  // Whether the host's slots land on different machines of a cluster (ray): every timing
  // worker's hello must match the first's, the timing lane is as wide as the hello's device
  // count, and a job whose node was lost is retried once on another slot.
  virtual bool slots_span_machines() const { return false; }

  // A plain reason for a start or an install that failed with `stderr_text` ("ssh authentication
  // failed", "connection refused", "the python on the host was not found"), or "" to keep the
  // failure's own words. By default the words of ssh (a command template often runs it) and of
  // the shell.
  virtual std::string explain_connection_failure(const std::string& stderr_text) const;
};

// The kind of a definition without "kind".
const HostKind& local_host_kind();

// The registry (host_kinds.cpp): the kind named `name`, or nullptr.
const HostKind* find_host_kind(std::string_view name);
// Every kind, the built-in ones first, in the order messages list them.
std::vector<const HostKind*> host_kinds();
// Adds a kind (a test's, an extension's) to the registry; false when its name is taken.
bool add_host_kind(std::unique_ptr<HostKind> kind);

// Where a remote host's copy of `bundle` lives: <remoteDir>/worker-<hash prefix>.
std::string installed_bundle_dir(const HostConfig& host, const WorkerBundle& bundle);

}  // namespace mk::tpu
