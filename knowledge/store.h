// The knowledge store: one SQLite database (WAL, versioned schema migrations). Today it holds the
// evaluation cache; documents, runs, graph nodes and lessons join it as those features land.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

struct sqlite3;

namespace mk::knowledge {

class Store {
 public:
  // Opens (creating if needed) and migrates the database; throws std::runtime_error with a
  // clear message when the file cannot be opened or written.
  explicit Store(const std::filesystem::path& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;
  const std::filesystem::path& path() const { return path_; }

  // Evaluation cache: results keyed by a hash of (normalised source, task, host fingerprint,
  // settings). Values are the worker's JSON result, stored as text.
  std::optional<std::string> cached_evaluation(const std::string& key);
  void store_evaluation(const std::string& key, const std::string& host_fingerprint,
                        const std::string& result_json);
  int64_t cached_evaluation_count();

  // The time model checked against a device measurement of the same kernel.
  void record_model_check(const std::string& kernel_key, const std::string& generation,
                          double predicted_s, double measured_s);
  struct ModelAccuracy {
    int64_t checks = 0;
    double mean_abs_relative_error = 0;
  };
  ModelAccuracy model_accuracy(const std::string& generation);

 private:
  void migrate();
  void exec(const char* sql);
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

// $MAXKERNEL_STORE, else $XDG_CACHE_HOME/maxkernel/store.sqlite, else
// ~/.cache/maxkernel/store.sqlite.
std::filesystem::path default_store_path();

}  // namespace mk::knowledge
