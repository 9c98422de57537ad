#include "knowledge/store.h"

#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include "knowledge/schema_migrations.h"

namespace mk::knowledge {

namespace {

// Each entry moves the knowledge tables from version i to i + 1 (component "knowledge" in
// component_schema; files from before that scheme count these steps in PRAGMA user_version).
// Never edit or reorder a shipped entry: append a new one at the end, whatever file the feature
// lives in (its Store methods can be in their own .cpp, like documents.cpp and lessons.cpp).
// A store opened by an older build upgrades by running the entries it has not seen.
const char* const kMigrations[] = {
    R"sql(
    CREATE TABLE eval_cache (
      key TEXT PRIMARY KEY,
      host_fingerprint TEXT NOT NULL,
      result_json TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    )sql",
    R"sql(
    CREATE TABLE model_checks (
      kernel_key TEXT NOT NULL,
      generation TEXT NOT NULL,
      predicted_s REAL NOT NULL,
      measured_s REAL NOT NULL,
      created_at INTEGER NOT NULL
    );
    )sql",
    // 3: documents, their chunks and the FTS5 index over chunks (rowid = chunks.id); meta holds
    // small facts such as the bundled corpus version.
    R"sql(
    CREATE TABLE documents (
      id INTEGER PRIMARY KEY,
      source TEXT NOT NULL UNIQUE,
      title TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('bundled', 'user')),
      content_hash TEXT NOT NULL,
      added_at INTEGER NOT NULL
    );
    CREATE TABLE chunks (
      id INTEGER PRIMARY KEY,
      document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
      ordinal INTEGER NOT NULL,
      heading TEXT NOT NULL,
      body TEXT NOT NULL
    );
    CREATE INDEX chunks_by_document ON chunks(document_id);
    CREATE VIRTUAL TABLE chunks_fts USING fts5(heading, body, tokenize = 'porter unicode61');
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    )sql",
    // 4: lessons learned from measured runs.
    R"sql(
    CREATE TABLE lessons (
      id INTEGER PRIMARY KEY,
      kernel_class TEXT NOT NULL,
      strategy TEXT NOT NULL,
      target TEXT NOT NULL,
      effect REAL NOT NULL,
      run_id TEXT NOT NULL,
      notes TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX lessons_by_class ON lessons(kernel_class, target);
    )sql",
    // 5: the tuning cache, one row per configuration of a kernel tuned on a host
    // (tuning_cache.cpp).
    R"sql(
    CREATE TABLE tuning_cache (
      key TEXT PRIMARY KEY,
      host_fingerprint TEXT NOT NULL,
      config_json TEXT NOT NULL,
      result_json TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    )sql",
};

constexpr sql::SchemaComponent kKnowledgeSchema{"knowledge", kMigrations,
                                                /*adopts_user_version=*/true};

using sql::Statement;

}  // namespace

std::filesystem::path default_store_path() {
  if (const char* p = std::getenv("MAXKERNEL_STORE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "maxkernel" / "store.sqlite";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home ? home : "/tmp") / ".cache" / "maxkernel" / "store.sqlite";
}

Store::Store(const std::filesystem::path& path) : path_(path), db_(path, "knowledge store") {
  sql::migrate(db_, kKnowledgeSchema);
}

int Store::latest_schema_version() {
  return static_cast<int>(std::size(kMigrations));
}

int Store::schema_version() {
  return static_cast<int>(sql::schema_version(db_, kKnowledgeSchema));
}

std::string Store::meta(const std::string& key) {
  Statement s(db_, "SELECT value FROM meta WHERE key = ?1");
  s.text(key);
  return s.row() ? s.col_text(0) : std::string();
}

void Store::set_meta(const std::string& key, const std::string& value) {
  Statement s(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
  s.text(key).text(value).run();
}

std::optional<std::string> Store::cached_evaluation(const std::string& key) {
  Statement s(db_, "SELECT result_json FROM eval_cache WHERE key = ?1");
  s.text(key);
  if (s.row()) return s.col_text(0);
  return std::nullopt;
}

void Store::store_evaluation(const std::string& key, const std::string& host_fingerprint,
                             const std::string& result_json) {
  Statement s(db_,
              "INSERT OR REPLACE INTO eval_cache (key, host_fingerprint, result_json, created_at) "
              "VALUES (?1, ?2, ?3, ?4)");
  s.text(key).text(host_fingerprint).text(result_json);
  s.integer(static_cast<int64_t>(std::time(nullptr)));
  s.run("write the evaluation cache");
}

void Store::record_model_check(const std::string& kernel_key, const std::string& generation,
                               double predicted_s, double measured_s) {
  Statement s(
      db_,
      "INSERT INTO model_checks (kernel_key, generation, predicted_s, measured_s, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  s.text(kernel_key).text(generation).real(predicted_s).real(measured_s);
  s.integer(static_cast<int64_t>(std::time(nullptr)));
  s.run("record a model check");
}

Store::ModelAccuracy Store::model_accuracy(const std::string& generation) {
  Statement s(db_,
              "SELECT COUNT(*), AVG(ABS(predicted_s - measured_s) / measured_s) FROM model_checks "
              "WHERE generation = ?1 AND measured_s > 0");
  s.text(generation);
  ModelAccuracy a;
  if (s.row()) {
    a.checks = s.col_int(0);
    a.mean_abs_relative_error = s.col_real(1);
  }
  return a;
}

int64_t Store::cached_evaluation_count() {
  Statement s(db_, "SELECT COUNT(*) FROM eval_cache");
  return s.row() ? s.col_int(0) : 0;
}

}  // namespace mk::knowledge
