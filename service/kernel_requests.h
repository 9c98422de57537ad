// The worker request for one kernel, built once for every front end that runs one (the CLI's
// lower / test / profile and bench, the server's Test and Profile lenses, on-save lowering and
// the HITL phases): the file, the text to run (an editor buffer may differ from the disk), the
// normalised text the evaluation cache keys on, the kernel, the options and the task the file
// belongs to (docs/tasks.md).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

// The request to run `text` as the kernel file `file`; `defines_infile_task` is the caller's
// parse of the text (it defines reference + make_inputs). nullopt + `reason` when the file
// belongs to no task.
std::optional<tpu::KernelRequest> kernel_request(
    const std::filesystem::path& file, const std::string& text, bool defines_infile_task,
    std::string& reason, const std::optional<std::string>& kernel = std::nullopt,
    const nlohmann::json& options = nlohmann::json::object());

}  // namespace mk::service
