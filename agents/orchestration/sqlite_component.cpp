#include "agents/orchestration/sqlite_component.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <stdexcept>

#include "knowledge/store_file_check.h"

namespace mk::agents::sql {

namespace {
// "<what> PATH: reason", naming the file even when `what` does not, and saying what a lock
// timeout means (SQLite's own "database is locked" does not say who or for how long).
std::string failure(sqlite3* db, const std::string& what, const std::string& reason) {
  std::string text = what;
  const char* file = sqlite3_db_filename(db, "main");
  if (file && *file && what.find(file) == std::string::npos) text += std::string(" ") + file;
  text += ": " + reason;
  if ((sqlite3_extended_errcode(db) & 0xff) == SQLITE_BUSY)
    text += " (another process held the store's write lock for more than " +
            std::to_string(knowledge::store_busy_timeout_ms()) +
            " ms; $MAXKERNEL_STORE_BUSY_TIMEOUT_MS sets that wait)";
  return text;
}
}  // namespace

sqlite3* open_database(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw std::runtime_error("cannot open the " + what + " " + path.string() + ": " + why);
  }
  sqlite3_busy_timeout(db, knowledge::store_busy_timeout_ms());
  try {
    // Before anything writes: a damaged file is reported, never migrated over or replaced.
    knowledge::prepare_store_connection(db, what, path);
    exec(db, "PRAGMA journal_mode=WAL", what + " " + path.string());
    exec(db, "PRAGMA foreign_keys=ON", what + " " + path.string());
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  return db;
}

void exec(sqlite3* db, const char* statement, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, statement, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error(failure(db, what, why));
  }
}

void migrate_component(sqlite3* db, const char* component, const char* const* migrations,
                       size_t count, const std::string& what) {
  exec(db,
       "CREATE TABLE IF NOT EXISTS component_schema (component TEXT PRIMARY KEY, "
       "version INTEGER NOT NULL)",
       what);
  exec(db, "BEGIN IMMEDIATE", what);
  try {
    int64_t version = 0;
    {
      Query q(db, "SELECT version FROM component_schema WHERE component = ?", what);
      q.text(component);
      if (q.row()) version = q.col_int(0);
    }
    const auto total = static_cast<int64_t>(count);
    for (int64_t v = version; v < total; ++v) exec(db, migrations[v], what);
    if (version < total) {
      Query q(db, "INSERT OR REPLACE INTO component_schema(component, version) VALUES (?, ?)",
              what);
      q.text(component).integer(total).run();
    }
    exec(db, "COMMIT", what);
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string timestamped_id(char prefix) {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", rd() & 0xffffu);
  return std::string(1, prefix) + stamp + "-" + suffix;
}

Query::Query(sqlite3* db, const std::string& statement, std::string what)
    : db_(db), what_(std::move(what)) {
  if (sqlite3_prepare_v2(db, statement.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
    throw std::runtime_error(failure(db, what_, sqlite3_errmsg(db)));
}

Query::~Query() {
  sqlite3_finalize(stmt_);
}

Query& Query::text(const std::string& s) {
  sqlite3_bind_text(stmt_, ++slot_, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  return *this;
}

Query& Query::integer(int64_t v) {
  sqlite3_bind_int64(stmt_, ++slot_, v);
  return *this;
}

Query& Query::maybe_integer(const std::optional<int64_t>& v) {
  if (v) return integer(*v);
  sqlite3_bind_null(stmt_, ++slot_);
  return *this;
}

Query& Query::maybe_real(const std::optional<double>& v) {
  if (v)
    sqlite3_bind_double(stmt_, ++slot_, *v);
  else
    sqlite3_bind_null(stmt_, ++slot_);
  return *this;
}

bool Query::row() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) throw std::runtime_error(failure(db_, what_, sqlite3_errmsg(db_)));
  return false;
}

std::string Query::col_text(int c) {
  const auto* p = sqlite3_column_text(stmt_, c);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, c)))
           : std::string();
}

int64_t Query::col_int(int c) {
  return sqlite3_column_int64(stmt_, c);
}

std::optional<int64_t> Query::col_maybe_int(int c) {
  if (sqlite3_column_type(stmt_, c) == SQLITE_NULL) return std::nullopt;
  return col_int(c);
}

std::optional<double> Query::col_maybe_real(int c) {
  if (sqlite3_column_type(stmt_, c) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(stmt_, c);
}

}  // namespace mk::agents::sql
