// How a slot of a `ray` host starts: the local driver (tpu/ray/maxkernel_ray_driver.py) that
// joins the cluster, places one actor for the slot's lane and relays the worker protocol to it.
#pragma once

#include <string>
#include <vector>

#include "tpu/host/host_config.h"
#include "tpu/host/worker_bundle.h"

namespace mk::tpu {

// The driver next to the worker directory (tpu/worker -> tpu/ray), or $MAXKERNEL_RAY_DRIVER.
std::string ray_driver_path(const WorkerBundle& bundle);

// The local argv of one slot's driver: the host's python runs it; the worker bundle is the
// job's working_dir on the cluster; `lane` is "compile" (a CPU) or "timing" (a device resource).
std::vector<std::string> ray_driver_argv(const HostConfig& host, const WorkerBundle& bundle,
                                         const std::string& lane);

}  // namespace mk::tpu
