#include "tpu/host/host_pool.h"

namespace mk::tpu {

void HostPool::add(std::unique_ptr<KernelHost> host) {
  std::lock_guard<std::mutex> lock(mutex_);
  hosts_.push_back(std::move(host));
  in_flight_.emplace_back();
}

WorkerReply HostPool::run(Lane lane, nlohmann::json request, const std::function<bool()>& cancelled,
                          size_t* chosen) {
  size_t best = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (hosts_.empty())
      return {WorkerReply::Status::Unreachable, nullptr, "no hosts configured", ""};
    double best_load = 0;
    for (size_t i = 0; i < hosts_.size(); ++i) {
      const HostConfig& c = hosts_[i]->config();
      const int slots = lane == Lane::Compile ? c.compile_slots : c.timing_slots;
      const double load = static_cast<double>(in_flight_[i][lane]) / std::max(1, slots);
      if (i == 0 || load < best_load) {
        best = i;
        best_load = load;
      }
    }
    ++in_flight_[best][lane];
  }
  if (chosen) *chosen = best;
  WorkerReply reply = hosts_[best]->run(lane, std::move(request), cancelled);
  std::lock_guard<std::mutex> lock(mutex_);
  --in_flight_[best][lane];
  return reply;
}

}  // namespace mk::tpu
