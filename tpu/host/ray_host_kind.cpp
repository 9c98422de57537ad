// `ray`: a Ray cluster. Each slot is a local driver (ray_driver.h) that places one actor on the
// cluster and relays the worker protocol to it; the driver ships the bundle itself (the job's
// working_dir), so nothing is installed. Slots land on different nodes.
#include <string_view>

#include "tpu/host/host_config.h"
#include "tpu/host/host_kind.h"
#include "tpu/host/ray_driver.h"

namespace mk::tpu {

namespace {
class RayHostKind : public HostKind {
 public:
  std::string_view name() const override { return "ray"; }

  void read_settings(const nlohmann::json& j, HostConfig& host) const override {
    host.address = j.value("address", std::string());
    host.device_resource = j.value("deviceResource", host.device_resource);
  }

  std::string check_settings(const HostConfig& host) const override {
    if (!host.address.empty() && !host.device_resource.empty()) return "";
    return std::string("ray needs an address (what ray.init accepts: HOST:PORT, ") +
           "ray://HOST:PORT or auto) and a non-empty deviceResource";
  }

  std::vector<std::string> worker_argv(const HostConfig& host, const WorkerBundle& bundle,
                                       Lane lane) const override {
    return ray_driver_argv(host, bundle, lane == Lane::Compile ? "compile" : "timing");
  }

  // The driver runs here; its actors' workers run on the cluster.
  bool python_runs_here() const override { return true; }
  bool slots_span_machines() const override { return true; }
};
}  // namespace

const HostKind& ray_host_kind() {
  static const RayHostKind kind;
  return kind;
}

std::optional<HostConfig> ray_host_from_name(const std::string& name) {
  constexpr std::string_view prefix = "ray:";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  HostConfig h;
  h.name = name;
  h.kind = &ray_host_kind();
  h.address = name.substr(prefix.size());
  return h;
}

}  // namespace mk::tpu
