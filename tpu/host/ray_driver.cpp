#include "tpu/host/ray_driver.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace mk::tpu {

std::string ray_driver_path(const WorkerBundle& bundle) {
  if (const char* env = std::getenv("MAXKERNEL_RAY_DRIVER"); env && *env) return env;
  return (bundle.directory.parent_path() / "ray" / "maxkernel_ray_driver.py").string();
}

std::vector<std::string> ray_driver_argv(const HostConfig& host, const WorkerBundle& bundle,
                                         const std::string& lane) {
  // Placing the actor is part of starting the slot: give it most of the start timeout, so a
  // cluster without room answers with the driver's reason rather than a bare timeout.
  const auto start_s = std::chrono::duration_cast<std::chrono::seconds>(host.start_timeout);
  const long long placement_s = std::max<long long>(5, start_s.count() * 3 / 4);
  return {host.python,
          "-u",
          ray_driver_path(bundle),
          "--address",
          host.address,
          "--lane",
          lane,
          "--nice",
          std::to_string(host.effective_worker_nice()),
          "--device-resource",
          host.device_resource,
          "--bundle",
          bundle.directory.string(),
          "--placement-timeout",
          std::to_string(placement_s)};
}

}  // namespace mk::tpu
