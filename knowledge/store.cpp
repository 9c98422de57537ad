#include "knowledge/store.h"

#include <sqlite3.h>

#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include "knowledge/sqlite_statement.h"
#include "knowledge/store_file_check.h"

namespace mk::knowledge {

namespace {

// Each entry moves the schema from version i to i + 1 (PRAGMA user_version), in one transaction.
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
};

using detail::Statement;

}  // namespace

std::filesystem::path default_store_path() {
  if (const char* p = std::getenv("MAXKERNEL_STORE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "maxkernel" / "store.sqlite";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home ? home : "/tmp") / ".cache" / "maxkernel" / "store.sqlite";
}

Store::Store(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open the knowledge store " + path.string() + ": " + why);
  }
  sqlite3_busy_timeout(db_, store_busy_timeout_ms());
  try {
    // Before anything writes: a damaged file is reported, never migrated over or replaced.
    prepare_store_connection(db_, "knowledge store", path_);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA foreign_keys=ON");
    migrate();
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Store::~Store() {
  sqlite3_close(db_);
}

void Store::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("knowledge store " + path_.string() + ": " + why);
  }
}

int Store::latest_schema_version() {
  return static_cast<int>(std::size(kMigrations));
}

int Store::schema_version() const {
  Statement s(db_, "PRAGMA user_version");
  return s.step() == SQLITE_ROW ? static_cast<int>(s.integer(0)) : 0;
}

void Store::migrate() {
  const int total = static_cast<int>(std::size(kMigrations));
  while (schema_version() < total) {
    detail::Transaction tx(db_);
    // Re-read under the write lock: another process opening the same new store may have
    // applied this step while we waited.
    const int v = schema_version();
    if (v >= total) break;
    exec(kMigrations[v]);
    exec(("PRAGMA user_version=" + std::to_string(v + 1)).c_str());
    tx.commit();
  }
}

std::string Store::meta(const std::string& key) {
  Statement s(db_, "SELECT value FROM meta WHERE key = ?1");
  s.bind(1, key);
  return s.step() == SQLITE_ROW ? s.text(0) : std::string();
}

void Store::set_meta(const std::string& key, const std::string& value) {
  Statement s(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
  s.bind(1, key);
  s.bind(2, value);
  s.run("write meta");
}

std::optional<std::string> Store::cached_evaluation(const std::string& key) {
  Statement s(db_, "SELECT result_json FROM eval_cache WHERE key = ?1");
  s.bind(1, key);
  if (s.step() == SQLITE_ROW) return s.text(0);
  return std::nullopt;
}

void Store::store_evaluation(const std::string& key, const std::string& host_fingerprint,
                             const std::string& result_json) {
  Statement s(db_,
              "INSERT OR REPLACE INTO eval_cache (key, host_fingerprint, result_json, created_at) "
              "VALUES (?1, ?2, ?3, ?4)");
  s.bind(1, key);
  s.bind(2, host_fingerprint);
  s.bind(3, result_json);
  s.bind(4, static_cast<int64_t>(std::time(nullptr)));
  if (s.step() != SQLITE_DONE)
    throw std::runtime_error("knowledge store " + path_.string() +
                             ": cannot write the evaluation cache: " + sqlite3_errmsg(db_));
}

void Store::record_model_check(const std::string& kernel_key, const std::string& generation,
                               double predicted_s, double measured_s) {
  Statement s(
      db_,
      "INSERT INTO model_checks (kernel_key, generation, predicted_s, measured_s, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  s.bind(1, kernel_key);
  s.bind(2, generation);
  s.bind_real(3, predicted_s);
  s.bind_real(4, measured_s);
  s.bind(5, static_cast<int64_t>(std::time(nullptr)));
  if (s.step() != SQLITE_DONE) {
    throw std::runtime_error("knowledge store " + path_.string() +
                             ": cannot record a model check: " + sqlite3_errmsg(db_));
  }
}

Store::ModelAccuracy Store::model_accuracy(const std::string& generation) {
  Statement s(db_,
              "SELECT COUNT(*), AVG(ABS(predicted_s - measured_s) / measured_s) FROM model_checks "
              "WHERE generation = ?1 AND measured_s > 0");
  s.bind(1, generation);
  ModelAccuracy a;
  if (s.step() == SQLITE_ROW) {
    a.checks = s.integer(0);
    a.mean_abs_relative_error = sqlite3_column_double(s.raw(), 1);
  }
  return a;
}

int64_t Store::cached_evaluation_count() {
  Statement s(db_, "SELECT COUNT(*) FROM eval_cache");
  return s.step() == SQLITE_ROW ? s.integer(0) : 0;
}

}  // namespace mk::knowledge
