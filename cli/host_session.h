// Everything a command needs to run kernels: the chosen hosts (one, or several as a pool that
// spreads the work) with the worker bundle, the knowledge store (evaluation cache) and the
// KernelJobs over both. Shared by test, optimize, bench and runs so they choose hosts and stores
// the same way.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "service/workspace.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::cli {

struct HostOptions {
  std::vector<std::string> host_names;  // --host (a comma list, or repeated); empty: "local"
  std::string hosts_file;
  std::string python;
  double timeout_s = 300;
  std::string store_path;  // "" = default_store_path()
  bool open_store = true;
};

struct HostSession {
  std::unique_ptr<service::Workspace> workspace;  // the store file and the hosts, opened once
  std::shared_ptr<knowledge::Store> store;  // null when it could not be opened (cache disabled)
  std::shared_ptr<tpu::HostPool> host;      // one host, or several sharing the work
  std::unique_ptr<tpu::KernelJobs> jobs;
  ~HostSession();
};

// nullptr with `error` set when a host or the worker bundle cannot be found, or (several hosts)
// when none answers (`no_host_answered`, optional, is then set: the host failed, not the usage)
// or two report different devices (HostPool::verify). Hosts of a pool that cannot be reached are
// set aside with a warning and the others do the work.
std::unique_ptr<HostSession> open_host_session(const HostOptions& options, std::string& error,
                                               bool* no_host_answered = nullptr);

// The hosts and the run store a search needs, or nullptr after printing "maxkernel COMMAND:
// <why>" to stderr (both optimize and bench --optimize exit 2 then).
struct SearchSession {
  std::unique_ptr<HostSession> hosts;
  std::shared_ptr<agents::RunStore> runs;
};
std::unique_ptr<SearchSession> open_search_session(const HostOptions& options,
                                                   const std::string& command);

// The store path the options name (or the default).
std::filesystem::path store_path_of(const HostOptions& options);

}  // namespace mk::cli
