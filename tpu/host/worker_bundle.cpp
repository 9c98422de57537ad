#include "tpu/host/worker_bundle.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tpu/host/content_hash.h"

namespace mk::tpu {

namespace fs = std::filesystem;

std::optional<WorkerBundle> load_worker_bundle(const fs::path& directory, std::string& error) {
  WorkerBundle b;
  b.directory = directory;
  std::error_code ec;
  // The worker is a package with subpackages: every .py below the directory, by its path
  // relative to it, so a host unpacks the same tree. Caches (__pycache__, .ruff_cache) are not
  // the worker's source.
  fs::recursive_directory_iterator it(directory, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (it->is_directory(ec)) {
      if (name == "__pycache__" || name.starts_with(".")) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && path.extension() == ".py")
      b.files.push_back(path.lexically_relative(directory).generic_string());
  }
  if (ec) {
    error = "cannot read the worker directory " + directory.string() + ": " + ec.message();
    return std::nullopt;
  }
  std::sort(b.files.begin(), b.files.end());
  if (std::find(b.files.begin(), b.files.end(), b.entry) == b.files.end()) {
    error = "the worker directory " + directory.string() + " has no " + b.entry;
    return std::nullopt;
  }
  std::string all;
  for (const std::string& name : b.files) {
    std::ifstream in(directory / name, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    all += name;
    all.push_back('\0');
    all += content.str();
    all.push_back('\0');
  }
  b.hash = sha256_hex(all);
  return b;
}

std::optional<fs::path> find_worker_directory() {
  if (const char* env = std::getenv("MAXKERNEL_WORKER_DIR"); env && *env) return fs::path(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path()) {
    // A build or checkout (ROOT/tpu/worker), or an install (PREFIX/share/maxkernel/tpu/worker).
    for (const fs::path& candidate :
         {dir / "tpu" / "worker", dir / "share" / "maxkernel" / "tpu" / "worker"})
      if (fs::exists(candidate / "maxkernel_worker.py", ec)) return candidate;
  }
  return std::nullopt;
}

}  // namespace mk::tpu
