#include "cli/host_session.h"

#include <spdlog/spdlog.h>

#include "cli/host_selection.h"
#include "tpu/host/worker_bundle.h"

namespace mk::cli {

HostSession::~HostSession() {
  if (host) host->shutdown();
}

std::filesystem::path store_path_of(const HostOptions& options) {
  return options.store_path.empty() ? knowledge::default_store_path()
                                    : std::filesystem::path(options.store_path);
}

std::unique_ptr<HostSession> open_host_session(const HostOptions& options, std::string& error,
                                               bool* no_host_answered) {
  if (no_host_answered) *no_host_answered = false;
  const std::vector<std::string> names =
      options.host_names.empty() ? std::vector<std::string>{"local"} : options.host_names;
  std::vector<tpu::HostConfig> configs;
  for (const std::string& name : names) {
    auto config = select_host(name, options.hosts_file, options.python, error);
    if (!config) return nullptr;
    config->request_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
    configs.push_back(std::move(*config));
  }
  auto worker_dir = tpu::find_worker_directory();
  if (!worker_dir) {
    error = "cannot find the worker (tpu/worker); set MAXKERNEL_WORKER_DIR";
    return nullptr;
  }
  auto bundle = tpu::load_worker_bundle(*worker_dir, error);
  if (!bundle) return nullptr;
  auto session = std::make_unique<HostSession>();
  session->host = std::make_unique<tpu::HostPool>();
  for (const tpu::HostConfig& config : configs)
    session->host->add(std::make_unique<tpu::KernelHost>(config, *bundle));
  // Several hosts: check them all before any work, so a mixed pool is refused up front and an
  // unreachable host is reported (and set aside) once.
  if (session->host->size() > 1 && !session->host->verify(error)) {
    if (no_host_answered) *no_host_answered = !session->host->devices_differ();
    return nullptr;
  }
  if (options.open_store) {
    try {
      session->store = std::make_unique<knowledge::Store>(store_path_of(options));
    } catch (const std::exception& e) {
      spdlog::warn("evaluation cache disabled: {}", e.what());
    }
  }
  session->jobs = std::make_unique<tpu::KernelJobs>(*session->host, session->store.get());
  return session;
}

}  // namespace mk::cli
