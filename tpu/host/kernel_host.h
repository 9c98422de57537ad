// A configured kernel host: installs the worker bundle there (remote hosts), and keeps a small
// pool of worker processes: `compile_slots` for lowering in parallel and `timing_slots` for
// evaluate / profile / autotune. On a device (tpu/gpu) the timing lane has one worker so timings
// do not disturb each other; on a cpu host (interpret mode) it is sized like the compile lane
// unless the host definition says otherwise (docs/hosts.md). A worker that crashed, hung or
// garbled its output is dropped; the next job starts a fresh one. On a ray host each slot is a
// local driver whose actor Ray places on the cluster: the timing lane has one slot per device
// resource, a job whose node was lost is retried once on another slot, and the lost slot is
// retired (the lanes shrink with the cluster).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tpu/host/host_config.h"
#include "tpu/host/job_runner.h"
#include "tpu/host/worker_bundle.h"
#include "tpu/host/worker_process.h"

namespace mk::tpu {

class KernelHost : public JobRunner {
 public:
  KernelHost(HostConfig config, WorkerBundle bundle);
  ~KernelHost() override;
  KernelHost(const KernelHost&) = delete;
  KernelHost& operator=(const KernelHost&) = delete;

  const HostConfig& config() const { return config_; }
  // Blocks the calling thread until a worker of the lane is free and has answered. A reply
  // saying the worker's Ray node was lost (WorkerReply::host_lost) is retried once.
  WorkerReply run(Lane lane, nlohmann::json request, const std::function<bool()>& cancelled = {},
                  std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                  const ProgressFn& on_progress = {}, std::string* ran_on = nullptr) override;
  // The hello of the host's device worker (a timing-lane worker: platform, device kind,
  // versions), fetched once; Unreachable on failure. Compile workers run JAX on the CPU only
  // (`--lane compile`), so their hellos say nothing about the device.
  WorkerReply hello() override;
  // "platform/device_kind/jax" — part of the evaluation cache key.
  std::string fingerprint() override;
  std::string name() const override { return config_.name; }
  // Workers currently alive (for tests: a crashed worker is not counted until replaced).
  size_t live_workers();
  // Workers the lane may run at once. An automatic timing lane has 1 until the first timing
  // worker's hello says the platform; `max_slots` is the most it can become (for callers sizing
  // thread pools).
  int slots(Lane lane);
  int max_slots(Lane lane) const;

  void shutdown() override;

 private:
  struct Slot {
    Lane lane;
    bool busy = false;
    std::unique_ptr<WorkerProcess> worker;
    bool retired = false;  // its Ray node was lost: no more jobs here
  };
  WorkerReply run_once(Lane lane, nlohmann::json request, const std::function<bool()>& cancelled,
                       std::optional<std::chrono::milliseconds> timeout,
                       const ProgressFn& on_progress);
  // With mutex_ held: a Ray slot whose node was lost takes no more jobs, unless it is the
  // lane's last (a replacement actor then goes wherever Ray finds room).
  void retire_locked(size_t index);
  // With mutex_ held: moves every idle slot's worker out (the caller ends them unlocked).
  std::vector<std::unique_ptr<WorkerProcess>> take_idle_workers_locked();
  std::unique_ptr<WorkerProcess> launch(Lane lane, WorkerReply& failure);
  bool ensure_installed(std::string& error);
  // With mutex_ held: once the platform is known, grows an automatic timing lane.
  void size_timing_lane_locked();

  HostConfig config_;
  WorkerBundle bundle_;
  std::mutex mutex_;
  std::condition_variable slot_free_;
  std::vector<Slot> slots_;
  bool installed_ = false;
  std::mutex install_mutex_;
  std::optional<WorkerReply> hello_;
  std::mutex hello_mutex_;          // one hello fetch at a time (no duplicate worker starts)
  bool timing_lane_sized_ = false;  // explicit timing_slots, or sized from a hello
  std::atomic<int> sized_timing_slots_{0};  // the automatic timing lane's size once known
};

// "platform/device_kind/jax-VERSION" of a worker's hello.
std::string fingerprint_of(const nlohmann::json& hello);

// Timing workers for an automatic timing lane, from a worker's hello: 1 on tpu/gpu (one per
// device, so timings do not disturb each other); on cpu, compile_slots capped at its cores. A
// Ray driver's hello counts the cluster's device resources: one slot (one actor) per device.
int automatic_timing_slots(const nlohmann::json& hello, int compile_slots);

}  // namespace mk::tpu
