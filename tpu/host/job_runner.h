// What KernelJobs needs from "where kernels run": one KernelHost, or a HostPool spreading jobs
// over several. Callers that take a JobRunner work the same with either.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tpu/host/worker_process.h"

namespace mk::tpu {

enum class Lane { Compile, Timing };

class JobRunner {
 public:
  using ProgressFn = std::function<void(const nlohmann::json&)>;
  virtual ~JobRunner() = default;

  // Blocks until a worker of the lane has answered. `ran_on` (optional) receives the name of the
  // host that ran the job (for a pool: the one it was sent to; empty when none could).
  virtual WorkerReply run(Lane lane, nlohmann::json request,
                          const std::function<bool()>& cancelled = {},
                          std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                          const ProgressFn& on_progress = {}, std::string* ran_on = nullptr) = 0;
  // A worker's hello (platform, device kind, versions); Unreachable when no host answers.
  virtual WorkerReply hello() = 0;
  // "platform/device_kind/jax-VERSION", part of the evaluation cache key; "unreachable" when no
  // host answers. A pool's hosts share one (HostPool::verify refuses a mixed pool).
  virtual std::string fingerprint() = 0;
  // For messages and run records: "tpu-a" or, for a pool, "tpu-a,tpu-b".
  virtual std::string name() const = 0;
  // Stops idle workers; nothing outlives the search or editor job that used them.
  virtual void shutdown() = 0;
};

}  // namespace mk::tpu
