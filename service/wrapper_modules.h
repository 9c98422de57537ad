// The workspace files a module's imports name, and the pallas_call wrappers they define: the
// cross-file input of the Pallas model (pallas::ForwarderSet), for the CLI and the server alike.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "source/pallas/forwarders.h"

namespace mk::service {

class WrapperModules {
 public:
  // The text of a file: an open document's when the caller has one, else the disk's.
  using ReadFile = std::function<std::optional<std::string>(const std::filesystem::path&)>;

  explicit WrapperModules(ReadFile read = read_from_disk);

  // Folders that absolute imports are resolved against, after the importing file's own folder.
  void set_roots(std::vector<std::filesystem::path> roots) { roots_ = std::move(roots); }

  // The wrappers named by `imports` (qualified names from the importing file, as
  // pallas::imported_names gives them), keyed by those names. Each module file is read and
  // parsed once until forgotten; `used` (optional) receives the files that were consulted.
  pallas::ForwarderSet forwarders_for(const std::vector<std::string>& imports,
                                      const std::filesystem::path& from_dir,
                                      std::vector<std::filesystem::path>* used = nullptr);

  // A file's text changed: its wrappers are described again when next asked for. Returns true
  // when they were cached.
  bool forget(const std::filesystem::path& file);

  // The folder holding the nearest pyproject.toml, setup.py or .git above `file`, else its own.
  static std::filesystem::path project_root(const std::filesystem::path& file);
  static std::optional<std::string> read_from_disk(const std::filesystem::path& file);

 private:
  std::optional<std::filesystem::path> locate(const std::string& module,
                                              const std::filesystem::path& from_dir) const;
  const std::vector<pallas::Forwarder>& wrappers_in(const std::filesystem::path& file);

  ReadFile read_;
  std::vector<std::filesystem::path> roots_;
  std::map<std::filesystem::path, std::vector<pallas::Forwarder>> modules_;
};

}  // namespace mk::service
