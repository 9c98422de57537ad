// The one SQLite layer under every table in the store file ($MAXKERNEL_STORE): the knowledge
// store (store.cpp, documents.cpp, lessons.cpp) and, above it, the run and HITL session stores
// (agents/orchestration). A connection (WAL, busy timeout, the damaged-file check and page-cache
// cap of store_file_check.h), one prepared-statement class and an immediate transaction. The
// schema migrations that run over a connection are in schema_migrations.h.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mk::knowledge::sql {

// One connection to the store file, closed on destruction. Errors name `what` (e.g. "run
// store") and the file.
class Database {
 public:
  // Opens (creating it and its folder if needed). Throws std::runtime_error("cannot open the
  // <what> PATH: reason"), or, for a damaged file or one that is not a database, "the <what>
  // PATH is damaged ..." with what to do (the file is left untouched). Writes wait up to
  // store_busy_timeout_ms() for other writers.
  Database(const std::filesystem::path& path, std::string what);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* raw() const { return db_; }
  const std::filesystem::path& path() const { return path_; }
  // "<what> PATH", the prefix of every error about this connection.
  const std::string& label() const { return label_; }
  // Runs one or more statements that return no rows.
  void exec(const std::string& statements);
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  // label(): reason, saying what a lock timeout means when SQLite's last error was one.
  std::string failure(const std::string& reason) const;

 private:
  std::filesystem::path path_;
  std::string label_;
  sqlite3* db_ = nullptr;
};

// A prepared statement, finalised on destruction. Parameters bind in order (?1, ?2, ... or ?),
// columns read by index or in order through Columns; every error names the connection.
class Statement {
 public:
  Statement(Database& db, const std::string& statement);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& text(const std::string& s);
  Statement& integer(int64_t v);
  Statement& real(double v);
  Statement& maybe_integer(const std::optional<int64_t>& v);
  Statement& maybe_real(const std::optional<double>& v);

  bool row();  // true while there is a row; throws on errors
  // Steps a statement that returns no rows; an error says "cannot <action>: reason".
  void run(const std::string& action = "");
  // Back to before the first step, bindings cleared (to run it again with new values).
  void reset();

  std::string col_text(int c);
  int64_t col_int(int c);
  double col_real(int c);
  std::optional<int64_t> col_maybe_int(int c);
  std::optional<double> col_maybe_real(int c);

 private:
  bool step(const std::string& action);
  Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
  int slot_ = 0;
};

// Reads the current row's columns left to right: `Columns(q) >> r.id >> r.name >> r.parent`.
class Columns {
 public:
  explicit Columns(Statement& q) : q_(q) {}
  Columns& operator>>(std::string& v) {
    v = q_.col_text(next_++);
    return *this;
  }
  Columns& operator>>(int64_t& v) {
    v = q_.col_int(next_++);
    return *this;
  }
  Columns& operator>>(int& v) {
    v = static_cast<int>(q_.col_int(next_++));
    return *this;
  }
  Columns& operator>>(double& v) {
    v = q_.col_real(next_++);
    return *this;
  }
  Columns& operator>>(std::optional<int64_t>& v) {
    v = q_.col_maybe_int(next_++);
    return *this;
  }
  Columns& operator>>(std::optional<double>& v) {
    v = q_.col_maybe_real(next_++);
    return *this;
  }

 private:
  Statement& q_;
  int next_ = 0;
};

// BEGIN IMMEDIATE (takes the write lock now, so two processes never both decide to write the
// same rows); rolls back unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace mk::knowledge::sql
