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

std::unique_ptr<HostSession> open_host_session(const HostOptions& options, std::string& error) {
  auto config = select_host(options.host_name, options.hosts_file, options.python, error);
  if (!config) return nullptr;
  config->request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  auto worker_dir = tpu::find_worker_directory();
  if (!worker_dir) {
    error = "cannot find the worker (tpu/worker); set MAXKERNEL_WORKER_DIR";
    return nullptr;
  }
  auto bundle = tpu::load_worker_bundle(*worker_dir, error);
  if (!bundle) return nullptr;
  auto session = std::make_unique<HostSession>();
  session->config = *config;
  if (options.open_store) {
    try {
      session->store = std::make_unique<knowledge::Store>(store_path_of(options));
    } catch (const std::exception& e) {
      spdlog::warn("evaluation cache disabled: {}", e.what());
    }
  }
  session->host = std::make_unique<tpu::KernelHost>(*config, *bundle);
  session->jobs = std::make_unique<tpu::KernelJobs>(*session->host, session->store.get());
  return session;
}

}  // namespace mk::cli
