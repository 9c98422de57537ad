// The first kernel for a plain JAX reference, written by the worker's templates (no LLM): the
// worker traces the reference, recognises its class and returns a Pallas module that lowers for
// TPU at the task's full shapes. A reference no template covers comes back as "no_template"
// with the primitives it met: never a kernel that is close.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/expander.h"
#include "knowledge/tpu_generations.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

struct GeneratedKernel {
  bool ok = false;
  std::string kernel_class;  // "matmul_epilogue", "rowwise", "attention", ...
  std::string description;
  std::string source;  // the whole module
  std::string body;    // the module without its imports: what an editor inserts
  std::string entry;   // the function the module defines for the task
  std::vector<std::string> imports, notes, primitives;
  nlohmann::json tunables = nlohmann::json::object();
  std::string error_kind;  // when !ok: "no_template", "task", "lowering", "host", ...
  std::string error;       // the message for the user
  std::string host;
};

GeneratedKernel generate_kernel(tpu::KernelJobs& jobs, const std::filesystem::path& anchor,
                                const nlohmann::json& task, const knowledge::TpuGeneration& target,
                                const std::optional<std::string>& entry,
                                const std::function<bool()>& cancelled = {});

// The generated kernel as the first child of a reference root.
agents::Proposal as_proposal(const GeneratedKernel& kernel);

}  // namespace mk::service
