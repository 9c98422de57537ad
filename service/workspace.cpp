#include "service/workspace.h"

#include <spdlog/spdlog.h>

#include "service/kernel_requests.h"

namespace mk::service {

Workspace::Workspace(std::filesystem::path store_path)
    : store_path_(std::move(store_path)), store_path_known_(!store_path_.empty()) {}

Workspace::~Workspace() {
  retire_hosts();
}

const std::filesystem::path& Workspace::store_path() {
  if (!store_path_known_) {
    store_path_ = knowledge::default_store_path();
    store_path_known_ = true;
  }
  return store_path_;
}

std::shared_ptr<agents::RunStore> Workspace::runs() {
  if (!runs_) runs_ = std::make_shared<agents::RunStore>(store_path());
  return runs_;
}

std::shared_ptr<agents::SessionStore> Workspace::sessions() {
  if (!sessions_) sessions_ = std::make_shared<agents::SessionStore>(store_path());
  return sessions_;
}

std::shared_ptr<knowledge::Store> Workspace::cache(std::string* why) {
  if (!cache_ && !cache_error_) {
    try {
      cache_ = std::make_shared<knowledge::Store>(store_path());
    } catch (const std::exception& e) {
      cache_error_ = e.what();
      spdlog::warn("evaluation cache disabled: {}", e.what());
    }
  }
  if (why) *why = cache_error_.value_or("");
  return cache_;
}

std::string host_choice_key(const HostChoice& choice) {
  nlohmann::json key = {
      {"names", choice.names},
      {"definitions", choice.definitions},
      {"python", choice.local_python},
      {"timeout_ms", choice.request_timeout ? choice.request_timeout->count() : -1}};
  return key.dump();
}

std::shared_ptr<tpu::HostPool> Workspace::warm_hosts(const HostChoice& choice, std::string& error,
                                                     bool verify, bool* no_host_answered) {
  const std::string key = host_choice_key(choice);
  if (auto it = pools_.find(key); it != pools_.end()) return it->second;
  std::shared_ptr<tpu::HostPool> made = open_hosts(choice, verify, error, no_host_answered);
  if (made) pools_[key] = made;
  return made;
}

std::shared_ptr<tpu::HostPool> Workspace::own_hosts(const HostChoice& choice,
                                                    std::string& error) const {
  return open_hosts(choice, /*verify=*/true, error);
}

void Workspace::retire_hosts() {
  for (auto& [key, pool] : pools_) pool->shutdown();
  pools_.clear();
}

std::optional<tpu::KernelRequest> Workspace::kernel_request(
    const std::filesystem::path& path, const std::string& text, bool defines_infile_task,
    std::string& reason, const std::optional<std::string>& kernel, const nlohmann::json& options) {
  return service::kernel_request(path, text, defines_infile_task, reason, kernel, options);
}

agents::Budget Workspace::default_budget(BudgetFront front, const std::string& mode) {
  return service::default_budget(front, mode);
}

}  // namespace mk::service
