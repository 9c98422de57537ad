// What one front end holds while it runs kernels and searches, the same for the CLI and the
// language server: the store file (its run, session and knowledge tables, each opened once and
// shared), warm host pools kept per host choice, the table of running jobs, and the worker
// request and default budget every run starts from. Front ends convert their own types (LSP
// documents, command-line options) into the plain values taken here. Not thread-safe: one
// thread (the server's main loop, the CLI's command) calls it; what it hands out (stores, pools)
// is shared with background jobs, which keep it alive until they end.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/orchestration/run_store.h"
#include "agents/orchestration/search_params.h"
#include "agents/orchestration/session_store.h"
#include "knowledge/store.h"
#include "service/budget_defaults.h"
#include "service/hosts.h"
#include "service/job_table.h"
#include "tpu/host/host_pool.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

class Workspace {
 public:
  // `store_path` empty: knowledge::default_store_path(), read at the first use of the store.
  explicit Workspace(std::filesystem::path store_path = {});
  ~Workspace();  // shuts the warm pools down (jobs still holding one keep it until they end)
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // ----- the store file ----------------------------------------------------------------------
  const std::filesystem::path& store_path();
  // The run and session tables: a search or a session cannot go on without them, so a failed
  // open throws (std::runtime_error naming the file and why) and is tried again next time.
  std::shared_ptr<agents::RunStore> runs();
  std::shared_ptr<agents::SessionStore> sessions();
  // The knowledge tables (evaluation and tuning caches): runs go on uncached without them, so a
  // failed open is tried once and warned about once; null then, with `why` (when given) set.
  std::shared_ptr<knowledge::Store> cache(std::string* why = nullptr);

  // ----- hosts -------------------------------------------------------------------------------
  // The warm pool of this host choice (names, definitions, interpreter, timeout), made on first
  // use and shared by every caller with the same choice; nullptr and `error` when the choice
  // names no usable host. `verify` (several hosts) asks each host first when the pool is made
  // (open_hosts).
  std::shared_ptr<tpu::HostPool> warm_hosts(const HostChoice& choice, std::string& error,
                                            bool verify = false, bool* no_host_answered = nullptr);
  // A verified pool of the caller's own (a search that stops its workers when it is cancelled).
  // Uses no state of the workspace: a background job may call it.
  std::shared_ptr<tpu::HostPool> own_hosts(const HostChoice& choice, std::string& error) const;
  // Shuts the warm pools down and forgets them (the host settings changed).
  void retire_hosts();
  size_t warm_pools() const { return pools_.size(); }

  // ----- jobs, requests, budgets ---------------------------------------------------------------
  JobTable& jobs() { return jobs_; }
  const JobTable& jobs() const { return jobs_; }
  // The worker request for `text` as the kernel file `path` (service::kernel_request).
  static std::optional<tpu::KernelRequest> kernel_request(
      const std::filesystem::path& path, const std::string& text, bool defines_infile_task,
      std::string& reason, const std::optional<std::string>& kernel = std::nullopt,
      const nlohmann::json& options = nlohmann::json::object());
  static agents::Budget default_budget(BudgetFront front, const std::string& mode);

 private:
  std::filesystem::path store_path_;
  bool store_path_known_ = false;
  std::shared_ptr<agents::RunStore> runs_;
  std::shared_ptr<agents::SessionStore> sessions_;
  std::shared_ptr<knowledge::Store> cache_;
  std::optional<std::string> cache_error_;  // set once the cache failed to open
  std::map<std::string, std::shared_ptr<tpu::HostPool>> pools_;  // by host_choice_key
  JobTable jobs_;
};

// The key warm pools are kept under: every field of the choice that changes the hosts.
std::string host_choice_key(const HostChoice& choice);

}  // namespace mk::service
