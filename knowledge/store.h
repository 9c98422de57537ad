// The knowledge store: the knowledge tables of the store file (store_database.h opens it,
// schema_migrations.h migrates it). It holds the evaluation and tuning caches, model checks,
// documents with an FTS5 index (documents.cpp, bundled_corpus.cpp) and lessons (lessons.cpp); the
// run and session tables (agents/orchestration) live in the same file under their own schema
// components. Adding a table: append a migration to kMigrations in store.cpp (see the comment
// there).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "knowledge/documents.h"
#include "knowledge/lessons.h"
#include "knowledge/store_database.h"

namespace mk::knowledge {

class Store {
 public:
  // Opens (creating if needed) and migrates the database; throws std::runtime_error with a
  // clear message when the file cannot be opened or written.
  explicit Store(const std::filesystem::path& path);

  // The knowledge tables' version in component_schema (schema_migrations.h).
  int schema_version();
  // The version a freshly opened store has: the number of migrations.
  static int latest_schema_version();
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

  // Documents (documents.cpp). Adding a source whose content (and kind) is unchanged is a no-op;
  // changed content replaces all of its chunks. Title: the document's own ('# ' heading or
  // file name) unless one is given.
  IndexOutcome add_document(const std::string& source, const std::string& content,
                            DocumentKind kind, const std::string& title = "");
  bool remove_document(const std::string& source);
  int64_t document_count(SearchFilter::Kind kind = SearchFilter::Kind::any);
  int64_t chunk_count();

  // BM25-ranked passages for free text (any characters; never throws on query syntax).
  // Indexes the bundled corpus first if this store has not got the current one.
  std::vector<Passage> search(const std::string& query, int limit, const SearchFilter& filter = {});

  // Context for an agent working on a kernel: passages for the error first (when there is
  // one), then for the kernel summary; no passage twice; trimmed to about token_budget tokens
  // (chars / 4), the last passage cut at a line end when it does not fit whole.
  std::vector<Passage> retrieve_for(const std::string& kernel_summary,
                                    const std::string& error_text, int token_budget);

  // The bundled corpus (bundled_corpus.cpp): indexes it when the store's copy is missing or from
  // another build's corpus version; drops bundled documents no longer shipped. Returns the
  // number of documents (re)indexed; 0 when already current.
  int ensure_bundled_corpus();

  // Tuning cache (tuning_cache.cpp): the worker's result for one configuration of a kernel,
  // keyed by a hash of (the kernel's evaluation key, the configuration), so the same kernel,
  // shapes and device are never tuned at the same configuration twice.
  std::optional<std::string> cached_tuning(const std::string& key);
  void store_tuning(const std::string& key, const std::string& host_fingerprint,
                    const std::string& config_json, const std::string& result_json);
  int64_t cached_tuning_count();

  // Lessons (lessons.cpp).
  int64_t record_lesson(const Lesson& lesson);
  // Lessons for a kernel class on a target ("" = any), best first: log(effect) weighted by
  // recency (half-life kLessonHalfLifeDays), so a recent 2x beats an old 2x and any speedup
  // beats a slowdown.
  std::vector<Lesson> lessons_for(const std::string& kernel_class, const std::string& target,
                                  int limit);

 private:
  IndexOutcome index_document(const std::string& source, const std::string& content,
                              DocumentKind kind, const std::string& title);
  bool drop_document(const std::string& source);
  // A document's chunks and their index entries; the document's row stays.
  void drop_chunks(int64_t document_id);
  std::string meta(const std::string& key);
  void set_meta(const std::string& key, const std::string& value);
  std::filesystem::path path_;
  sql::Database db_;
  // search() may be called from several threads; one of them syncs the bundled corpus.
  std::atomic<bool> bundled_checked_ = false;
  std::mutex bundled_mutex_;
};

// $MAXKERNEL_STORE, else $XDG_CACHE_HOME/maxkernel/store.sqlite, else
// ~/.cache/maxkernel/store.sqlite.
std::filesystem::path default_store_path();

}  // namespace mk::knowledge
