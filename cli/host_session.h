// Everything a command needs to run kernels: the chosen host with its worker bundle, the
// knowledge store (evaluation cache) and the KernelJobs over both. Shared by test, optimize,
// bench and runs so they choose hosts and stores the same way.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "knowledge/store.h"
#include "tpu/host/kernel_host.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::cli {

struct HostOptions {
  std::string host_name = "local";
  std::string hosts_file;
  std::string python;
  double timeout_s = 300;
  std::string store_path;  // "" = default_store_path()
  bool open_store = true;
};

struct HostSession {
  tpu::HostConfig config;
  std::unique_ptr<knowledge::Store> store;  // null when it could not be opened (cache disabled)
  std::unique_ptr<tpu::KernelHost> host;
  std::unique_ptr<tpu::KernelJobs> jobs;
  ~HostSession();
};

// nullopt with `error` set when the host or the worker bundle cannot be found.
std::unique_ptr<HostSession> open_host_session(const HostOptions& options, std::string& error);

// The store path the options name (or the default).
std::filesystem::path store_path_of(const HostOptions& options);

}  // namespace mk::cli
