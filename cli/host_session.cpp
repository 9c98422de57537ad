#include "cli/host_session.h"

#include <cstdlib>
#include <iostream>

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
  service::HostChoice choice;
  choice.names = options.host_names;
  choice.local_python = options.python;
  choice.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  std::string file = options.hosts_file;
  if (file.empty()) {
    if (const char* env = std::getenv("MAXKERNEL_HOSTS_FILE"); env && *env) file = env;
  }
  if (!file.empty() && !service::read_hosts_file(file, choice, error)) return nullptr;
  auto session = std::make_unique<HostSession>();
  session->workspace = std::make_unique<service::Workspace>(store_path_of(options));
  session->host = session->workspace->warm_hosts(choice, error, /*verify=*/true, no_host_answered);
  if (!session->host) return nullptr;
  if (options.open_store) session->store = session->workspace->cache();
  session->jobs = std::make_unique<tpu::KernelJobs>(*session->host, session->store.get());
  return session;
}

std::unique_ptr<SearchSession> open_search_session(const HostOptions& options,
                                                   const std::string& command) {
  std::string error;
  auto out = std::make_unique<SearchSession>();
  out->hosts = open_host_session(options, error);
  if (!out->hosts) {
    std::cerr << "maxkernel " << command << ": " << error << "\n";
    return nullptr;
  }
  try {
    out->runs = out->hosts->workspace->runs();
  } catch (const std::exception& e) {
    std::cerr << "maxkernel " << command << ": " << e.what() << "\n";
    return nullptr;
  }
  return out;
}

}  // namespace mk::cli
