#include "knowledge/store_database.h"

#include <stdexcept>
#include <utility>

#include "knowledge/store_file_check.h"

namespace mk::knowledge::sql {

Database::Database(const std::filesystem::path& path, std::string what)
    : path_(path), label_(what + " " + path.string()) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open the " + what + " " + path.string() + ": " + why);
  }
  sqlite3_busy_timeout(db_, store_busy_timeout_ms());
  try {
    // Before anything writes: a damaged file is reported, never migrated over or replaced.
    prepare_store_connection(db_, what, path);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA foreign_keys=ON");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Database::~Database() {
  sqlite3_close(db_);
}

std::string Database::failure(const std::string& reason) const {
  std::string text = label_ + ": " + reason;
  // SQLite's own "database is locked" says neither who held the lock nor for how long.
  if ((sqlite3_extended_errcode(db_) & 0xff) == SQLITE_BUSY)
    text += " (another process held the store's write lock for more than " +
            std::to_string(store_busy_timeout_ms()) +
            " ms; $MAXKERNEL_STORE_BUSY_TIMEOUT_MS sets that wait)";
  return text;
}

void Database::exec(const std::string& statements) {
  char* err = nullptr;
  if (sqlite3_exec(db_, statements.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error(failure(why));
  }
}

Statement::Statement(Database& db, const std::string& statement) : db_(db) {
  if (sqlite3_prepare_v2(db.raw(), statement.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
    throw std::runtime_error(db_.failure(sqlite3_errmsg(db.raw())));
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::text(const std::string& s) {
  sqlite3_bind_text(stmt_, ++slot_, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::integer(int64_t v) {
  sqlite3_bind_int64(stmt_, ++slot_, v);
  return *this;
}

Statement& Statement::real(double v) {
  sqlite3_bind_double(stmt_, ++slot_, v);
  return *this;
}

Statement& Statement::maybe_integer(const std::optional<int64_t>& v) {
  if (v) return integer(*v);
  sqlite3_bind_null(stmt_, ++slot_);
  return *this;
}

Statement& Statement::maybe_real(const std::optional<double>& v) {
  if (v) return real(*v);
  sqlite3_bind_null(stmt_, ++slot_);
  return *this;
}

bool Statement::step(const std::string& action) {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) {
    // The connection's message, unless a call on another thread has replaced it since (then it
    // may read "not an error"): the step's own code still names the failure.
    const bool ours = (sqlite3_extended_errcode(db_.raw()) & 0xff) == (rc & 0xff);
    const std::string why = ours ? sqlite3_errmsg(db_.raw()) : sqlite3_errstr(rc);
    throw std::runtime_error(db_.failure(action.empty() ? why : "cannot " + action + ": " + why));
  }
  return false;
}

bool Statement::row() {
  return step("");
}

void Statement::run(const std::string& action) {
  step(action);
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  slot_ = 0;
}

std::string Statement::col_text(int c) {
  const auto* p = sqlite3_column_text(stmt_, c);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, c)))
           : std::string();
}

int64_t Statement::col_int(int c) {
  return sqlite3_column_int64(stmt_, c);
}

double Statement::col_real(int c) {
  return sqlite3_column_double(stmt_, c);
}

std::optional<int64_t> Statement::col_maybe_int(int c) {
  if (sqlite3_column_type(stmt_, c) == SQLITE_NULL) return std::nullopt;
  return col_int(c);
}

std::optional<double> Statement::col_maybe_real(int c) {
  if (sqlite3_column_type(stmt_, c) == SQLITE_NULL) return std::nullopt;
  return col_real(c);
}

Transaction::Transaction(Database& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace mk::knowledge::sql
