// Several hosts used at once: each job goes to the host with the smallest share of busy workers
// in its lane (ties to the first configured), so work spreads over every TPU VM the user named.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "tpu/host/kernel_host.h"

namespace mk::tpu {

class HostPool {
 public:
  void add(std::unique_ptr<KernelHost> host);
  size_t size() const { return hosts_.size(); }
  KernelHost& host(size_t i) { return *hosts_[i]; }

  // Runs on the least-loaded host; `chosen` (optional) receives the host's index.
  WorkerReply run(Lane lane, nlohmann::json request, const std::function<bool()>& cancelled = {},
                  size_t* chosen = nullptr);

 private:
  std::vector<std::unique_ptr<KernelHost>> hosts_;
  std::mutex mutex_;
  // Jobs in flight per host and lane: chosen and counted under one lock, so two jobs that
  // arrive together never both pick the same idle host.
  std::vector<std::map<Lane, int>> in_flight_;
};

}  // namespace mk::tpu
