// The kernel operations users ask for (lower, test, profile) on a host: finds the task a file
// belongs to, builds the worker request, and serves repeated evaluations from the cache.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "knowledge/store.h"
#include "tpu/host/job_runner.h"
#include "tpu/jobs/worker_replies.h"

namespace mk::tpu {

// Which task a kernel file belongs to, by the conventions in docs/tasks.md:
//   a kernel_task.yaml beside the file         -> {"form": "maxkernel", "path": dir}
//   a baseline.py beside the file (not itself) -> {"form": "jaxbench", "baseline": ...}
//   the file defines reference + make_inputs   -> {"form": "infile", "path": file}
// `defines_infile_task` comes from the caller's parse of the file. nullopt + reason when none.
std::optional<nlohmann::json> locate_task(const std::filesystem::path& file,
                                          bool defines_infile_task, std::string& reason);

// The task a plain JAX reference defines, for a run that writes the kernel itself:
//   a folder with kernel_task.yaml, or that file       -> {"form": "maxkernel", ...}
//   a folder with baseline.py, or that file             -> {"form": "jaxbench", ...}
//   a file that defines reference + make_inputs         -> {"form": "infile", "path": file}
// `anchor` is set to where a kernel for it lives beside the task (the folder, or the file).
std::optional<nlohmann::json> locate_reference_task(const std::filesystem::path& target,
                                                    bool defines_infile_task,
                                                    std::filesystem::path& anchor,
                                                    std::string& reason);

struct KernelRequest {
  std::filesystem::path file;
  std::string source;                 // the text to run (an editor buffer may differ from the disk)
  std::string normalized_source;      // for the cache key (comments and blank lines dropped)
  std::optional<std::string> kernel;  // entry point override
  nlohmann::json task;
  nlohmann::json options =
      nlohmann::json::object();  // extra request fields (seeds, timing, target)
};

struct JobResult {
  WorkerReply reply;
  bool from_cache = false;
  std::string cache_key;
  std::string host;  // the host that ran it ("" for a cache hit or when none could)
};

// The autotune op over a space: the tuning cache's rows and the worker's fresh ones together.
struct TuningResult {
  WorkerReply reply;  // the worker's reply for the configurations not cached (Ok when all were)
  // One per configuration, in the space's order: the worker's result with "cached": true|false.
  nlohmann::json results = nlohmann::json::array();
  int evaluated = 0;   // configurations the worker ran this time
  int cache_hits = 0;  // configurations answered from the tuning cache
  std::string host;    // the host that ran the fresh ones ("" when none ran)
};

class KernelJobs {
 public:
  // `runner` is one KernelHost or a HostPool; `store` may be null (no cache).
  KernelJobs(JobRunner& runner, knowledge::Store* store) : host_(runner), store_(store) {}

  using Progress = std::function<void(const nlohmann::json& event)>;
  JobResult lower(const KernelRequest& request, const std::function<bool()>& cancelled = {});
  // evaluate: correctness on fresh seeds + timing; cached by source, task, host and settings.
  JobResult test(const KernelRequest& request, bool use_cache,
                 const std::function<bool()>& cancelled = {}, const Progress& on_progress = {});
  // The task's reference as XLA runs it: its cost at full shapes and, on a device, its time.
  JobResult reference(const KernelRequest& request, const std::function<bool()>& cancelled = {});
  // A Pallas kernel written from the task's reference by the worker's templates (no LLM),
  // lowered before it is returned; kind "no_template" when no template covers it. On a GPU host
  // (its timing worker's hello says "gpu") the request asks for the GPU form (kernel_form), a
  // Triton kernel lowered for CUDA, unless the options name a form; otherwise the TPU form.
  JobResult generate(const KernelRequest& request, const std::function<bool()>& cancelled = {});
  JobResult profile(const KernelRequest& request, const std::function<bool()>& cancelled = {},
                    const Progress& on_progress = {});
  // Every configuration of `space` ({"NAME": [values...]}, the Cartesian product) checked and
  // timed by the worker's autotune op, but for those the tuning cache holds for this kernel, task,
  // options and host: a kernel is never tuned twice at one configuration on one device.
  TuningResult autotune(const KernelRequest& request, const nlohmann::json& space,
                        const std::function<bool()>& cancelled = {},
                        const Progress& on_progress = {});

 private:
  nlohmann::json base_request(const std::string& op, const KernelRequest& request) const;
  // The evaluation cache key of `request` on this host ("" without a store or a reachable host);
  // `fingerprint` gets the host's fingerprint it was made with.
  std::string cache_key(const KernelRequest& request, std::string& fingerprint);
  // Compares the time model with a device measurement and records both in the store.
  void check_model(JobResult& result, const EvaluateReply& reply);

  JobRunner& host_;
  knowledge::Store* store_;
};

// A key over everything that decides an evaluation's outcome: the candidate (normalised), the
// task (including the reference file's text), the host's fingerprint and the request options.
std::string evaluation_cache_key(const KernelRequest& request, const std::string& host_fingerprint);

// The configurations of a space ({"NAME": [values...]}) in order: the Cartesian product, the
// last name varying fastest. Throws std::invalid_argument on anything but non-empty lists.
std::vector<nlohmann::json> space_configs(const nlohmann::json& space);

}  // namespace mk::tpu
