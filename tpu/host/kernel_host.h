// A configured kernel host: installs the worker bundle there (remote hosts), and keeps a small
// pool of worker processes: `compile_slots` for lowering in parallel and `timing_slots` (one per
// device) for evaluate / profile / autotune so timings do not disturb each other. A worker that
// crashed, hung or garbled its output is dropped; the next job starts a fresh one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tpu/host/host_config.h"
#include "tpu/host/worker_bundle.h"
#include "tpu/host/worker_process.h"

namespace mk::tpu {

enum class Lane { Compile, Timing };

class KernelHost {
 public:
  KernelHost(HostConfig config, WorkerBundle bundle);
  ~KernelHost();
  KernelHost(const KernelHost&) = delete;
  KernelHost& operator=(const KernelHost&) = delete;

  const HostConfig& config() const { return config_; }
  // Blocks the calling thread until a worker of the lane is free and has answered.
  WorkerReply run(Lane lane, nlohmann::json request, const std::function<bool()>& cancelled = {},
                  std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                  const std::function<void(const nlohmann::json&)>& on_progress = {});
  // The worker's hello (platform, device kind, versions), fetched once; Unreachable on failure.
  WorkerReply hello();
  // "platform/device_kind/jax" — part of the evaluation cache key.
  std::string fingerprint();
  // Workers currently alive (for tests: a crashed worker is not counted until replaced).
  size_t live_workers();

  void shutdown();

 private:
  struct Slot {
    Lane lane;
    bool busy = false;
    std::unique_ptr<WorkerProcess> worker;
  };
  std::unique_ptr<WorkerProcess> launch(WorkerReply& failure);
  bool ensure_installed(std::string& error);
  std::vector<std::string> worker_argv() const;
  std::string remote_bundle_dir() const;

  HostConfig config_;
  WorkerBundle bundle_;
  std::mutex mutex_;
  std::condition_variable slot_free_;
  std::vector<Slot> slots_;
  bool installed_ = false;
  std::mutex install_mutex_;
  std::optional<WorkerReply> hello_;
};

// Turns ssh's stderr into a clear reason ("authentication failed", "connection refused", ...).
std::string explain_connection_failure(const std::string& stderr_text);

}  // namespace mk::tpu
