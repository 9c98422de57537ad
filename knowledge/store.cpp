#include "knowledge/store.h"

#include <sqlite3.h>

#include <cstdlib>
#include <ctime>
#include <stdexcept>

namespace mk::knowledge {

namespace {

// Each entry moves the schema from version i to i + 1. Never edit a shipped entry: append.
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
};

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("store: ") + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  void bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind_real(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  sqlite3_stmt* raw() { return stmt_; }

  int step() { return sqlite3_step(stmt_); }
  std::string text(int col) {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : "";
  }
  int64_t integer(int col) { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

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
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA foreign_keys=ON");
  migrate();
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

int Store::schema_version() const {
  Statement s(db_, "PRAGMA user_version");
  return s.step() == SQLITE_ROW ? static_cast<int>(s.integer(0)) : 0;
}

void Store::migrate() {
  const int total = static_cast<int>(std::size(kMigrations));
  for (int v = schema_version(); v < total; ++v) {
    exec("BEGIN IMMEDIATE");
    try {
      exec(kMigrations[v]);
      exec(("PRAGMA user_version=" + std::to_string(v + 1)).c_str());
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
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
    throw std::runtime_error("knowledge store: cannot write the evaluation cache: " +
                             std::string(sqlite3_errmsg(db_)));
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
    throw std::runtime_error("knowledge store: cannot record a model check: " +
                             std::string(sqlite3_errmsg(db_)));
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
