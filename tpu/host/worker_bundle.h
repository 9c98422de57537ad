// The Python worker's files (tpu/worker/*.py) and their content hash: the host installs the
// bundle under <remote_dir>/worker-<hash> and reuses it while the hash is unchanged.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mk::tpu {

struct WorkerBundle {
  std::filesystem::path directory;
  std::vector<std::string> files;  // names relative to directory, sorted
  std::string hash;                // sha256 over names and contents
  std::string entry = "maxkernel_worker.py";
};

// Loads the bundle from `directory`; error when it has no entry script.
std::optional<WorkerBundle> load_worker_bundle(const std::filesystem::path& directory,
                                               std::string& error);
// tpu/worker found next to the running binary (build/bin/../../tpu/worker) or via
// MAXKERNEL_WORKER_DIR.
std::optional<std::filesystem::path> find_worker_directory();

}  // namespace mk::tpu
