// Several hosts used at once: each job goes to the host with the smallest share of busy workers
// in its lane (ties to the first configured), so work spreads over every TPU VM the user named.
// A host that cannot be reached is set aside (its reason kept) and its jobs go to the others;
// the last host left is never set aside, so a dead pool answers with that host's own error.
// A pool of one behaves exactly like its host.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tpu/host/job_runner.h"
#include "tpu/host/kernel_host.h"

namespace mk::tpu {

class HostPool : public JobRunner {
 public:
  HostPool() = default;
  ~HostPool() override;
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  void add(std::unique_ptr<KernelHost> host);
  size_t size() const { return hosts_.size(); }
  KernelHost& host(size_t i) { return *hosts_[i]; }
  // True when every host runs on this machine (on-save lowering stays local).
  bool all_local() const;
  // Workers of the lane over the hosts in use: how many jobs can run at once.
  int max_slots(Lane lane) const;

  // Says hello to every host at once. Hosts that do not answer are set aside; false with `error`
  // when none answers, or when two answer with different fingerprints: timings from different
  // chips (or JAX versions) must not be mixed in one search. Run before a search starts; the
  // first fingerprint() of an unverified pool of several hosts runs it too.
  bool verify(std::string& error);
  // After a failed verify: true when hosts answered but differ, false when none answered.
  bool devices_differ() const { return devices_differ_; }
  // Hosts set aside so far, as "name: reason".
  std::vector<std::string> set_aside() const;

  WorkerReply run(Lane lane, nlohmann::json request, const std::function<bool()>& cancelled = {},
                  std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                  const ProgressFn& on_progress = {}, std::string* ran_on = nullptr) override;
  // The hello of the first host still in use.
  WorkerReply hello() override;
  // The hosts' common fingerprint; "unreachable" when no host answers or the hosts differ.
  std::string fingerprint() override;
  std::string name() const override;
  void shutdown() override;

 private:
  // Index of the least-loaded host not set aside (counted in flight), nullopt when none is left.
  std::optional<size_t> reserve(Lane lane);
  // Sets host `i` aside unless it is the last one in use; true when it was.
  bool set_aside_locked(size_t i, const std::string& reason);

  std::vector<std::unique_ptr<KernelHost>> hosts_;
  mutable std::mutex mutex_;
  // Jobs in flight per host and lane: chosen and counted under one lock, so two jobs that
  // arrive together never both pick the same idle host.
  std::vector<std::map<Lane, int>> in_flight_;
  std::vector<std::string> aside_reason_;  // "" while the host is in use
  std::mutex verify_mutex_;                // one verify at a time; held across the hellos
  std::optional<std::string> fingerprint_;
  std::string verify_error_;
  bool devices_differ_ = false;
};

}  // namespace mk::tpu
