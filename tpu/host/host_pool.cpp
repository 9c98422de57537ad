#include "tpu/host/host_pool.h"

#include <spdlog/spdlog.h>

#include <thread>

namespace mk::tpu {

HostPool::~HostPool() {
  shutdown();
}

void HostPool::add(std::unique_ptr<KernelHost> host) {
  std::lock_guard<std::mutex> lock(mutex_);
  hosts_.push_back(std::move(host));
  in_flight_.emplace_back();
  aside_reason_.emplace_back();
}

bool HostPool::all_local() const {
  for (const auto& h : hosts_)
    if (!h->config().kind->workers_run_here()) return false;
  return !hosts_.empty();
}

int HostPool::max_slots(Lane lane) const {
  std::lock_guard<std::mutex> lock(mutex_);
  int total = 0;
  for (size_t i = 0; i < hosts_.size(); ++i)
    if (aside_reason_[i].empty()) total += hosts_[i]->max_slots(lane);
  return total;
}

std::string HostPool::name() const {
  std::string names;
  for (const auto& h : hosts_) names += (names.empty() ? "" : ",") + h->config().name;
  return names;
}

std::vector<std::string> HostPool::set_aside() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (size_t i = 0; i < hosts_.size(); ++i)
    if (!aside_reason_[i].empty())
      out.push_back(hosts_[i]->config().name + ": " + aside_reason_[i]);
  return out;
}

bool HostPool::set_aside_locked(size_t i, const std::string& reason) {
  if (!aside_reason_[i].empty()) return true;
  size_t in_use = 0;
  for (const std::string& r : aside_reason_) in_use += r.empty() ? 1 : 0;
  if (in_use <= 1) return false;
  aside_reason_[i] = reason.empty() ? "unreachable" : reason;
  spdlog::warn("host {} set aside: {}; its jobs go to the other hosts", hosts_[i]->config().name,
               aside_reason_[i]);
  return true;
}

std::optional<size_t> HostPool::reserve(Lane lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<size_t> best;
  double best_load = 0;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (!aside_reason_[i].empty()) continue;
    const int slots = hosts_[i]->max_slots(lane);
    const double load = static_cast<double>(in_flight_[i][lane]) / std::max(1, slots);
    if (!best || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  if (best) ++in_flight_[*best][lane];
  return best;
}

WorkerReply HostPool::run(Lane lane, nlohmann::json request, const std::function<bool()>& cancelled,
                          std::optional<std::chrono::milliseconds> timeout,
                          const ProgressFn& on_progress, std::string* ran_on) {
  if (ran_on) ran_on->clear();
  for (;;) {
    const std::optional<size_t> chosen = reserve(lane);
    if (!chosen) return {WorkerReply::Status::Unreachable, nullptr, "no hosts configured", ""};
    KernelHost& target = *hosts_[*chosen];
    // A copy: the request is sent again to another host when this one cannot be reached.
    WorkerReply reply = target.run(lane, request, cancelled, timeout, on_progress);
    std::lock_guard<std::mutex> lock(mutex_);
    --in_flight_[*chosen][lane];
    // Only a host that cannot start a worker is set aside: a crash or timeout is the
    // candidate's doing and would happen on any host.
    if (reply.status == WorkerReply::Status::Unreachable &&
        set_aside_locked(*chosen, reply.message))
      continue;
    if (ran_on) *ran_on = target.config().name;
    return reply;
  }
}

bool HostPool::verify(std::string& error) {
  std::lock_guard<std::mutex> verifying(verify_mutex_);
  if (fingerprint_) return true;
  if (!verify_error_.empty()) return error = verify_error_, false;
  if (hosts_.empty()) return error = "no hosts configured", false;
  // All hellos at once: an unreachable ssh host costs its connect timeout once, not per host.
  std::vector<WorkerReply> hellos(hosts_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < hosts_.size(); ++i)
    threads.emplace_back([this, i, &hellos] { hellos[i] = hosts_[i]->hello(); });
  for (auto& t : threads) t.join();

  std::optional<size_t> first;
  std::string reasons;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const std::string& host_name = hosts_[i]->config().name;
    if (!hellos[i].ok()) {
      reasons += (reasons.empty() ? "" : "; ") + host_name + ": " + hellos[i].message;
      continue;
    }
    if (!first) {
      first = i;
      continue;
    }
    const std::string mine = hosts_[i]->fingerprint(), theirs = hosts_[*first]->fingerprint();
    if (mine != theirs) {
      devices_differ_ = true;
      verify_error_ = "hosts " + hosts_[*first]->config().name + " (" + theirs + ") and " +
                      host_name + " (" + mine +
                      ") differ: timings from different chips or JAX versions must not be mixed "
                      "in one search; name hosts of one kind (docs/hosts.md)";
      return error = verify_error_, false;
    }
  }
  if (!first) {
    verify_error_ = "no host of " + name() + " answered: " + reasons;
    return error = verify_error_, false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < hosts_.size(); ++i)
      if (!hellos[i].ok()) set_aside_locked(i, hellos[i].message);
  }
  fingerprint_ = hosts_[*first]->fingerprint();
  return true;
}

WorkerReply HostPool::hello() {
  std::optional<size_t> first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < hosts_.size() && !first; ++i)
      if (aside_reason_[i].empty()) first = i;
  }
  if (!first) return {WorkerReply::Status::Unreachable, nullptr, "no hosts configured", ""};
  return hosts_[*first]->hello();
}

std::string HostPool::fingerprint() {
  if (hosts_.size() == 1) return hosts_[0]->fingerprint();
  std::string error;
  if (!verify(error)) {
    spdlog::error("host pool {}: {}", name(), error);
    return "unreachable";  // no cache key: nothing is cached under a mixed or dead pool
  }
  return *fingerprint_;
}

void HostPool::shutdown() {
  for (auto& h : hosts_) h->shutdown();
}

}  // namespace mk::tpu
