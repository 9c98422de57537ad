// The Python worker's files (every .py under tpu/worker, subpackages included) and their content
// hash: the host installs the bundle under <remote_dir>/worker-<hash> and reuses it while the hash
// is unchanged.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mk::tpu {

struct WorkerBundle {
  std::filesystem::path directory;
  std::vector<std::string> files;  // paths relative to directory ('/'-separated), sorted
  std::string hash;                // sha256 over relative paths and contents
  std::string entry = "maxkernel_worker.py";
};

// Loads the bundle from `directory`; error when it has no entry script.
std::optional<WorkerBundle> load_worker_bundle(const std::filesystem::path& directory,
                                               std::string& error);
// tpu/worker found next to the running binary (build/bin/../../tpu/worker) or via
// MAXKERNEL_WORKER_DIR.
std::optional<std::filesystem::path> find_worker_directory();

}  // namespace mk::tpu
