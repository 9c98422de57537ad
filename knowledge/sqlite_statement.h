// A prepared SQLite statement with RAII finalisation, shared by the store's feature files
// (store.cpp, documents.cpp, lessons.cpp, ...). Internal to knowledge/: callers use Store.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mk::knowledge::detail {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
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
  // Steps a statement that returns no rows; throws with `what` and SQLite's message otherwise.
  void run(const char* what) {
    if (step() != SQLITE_DONE)
      throw std::runtime_error(std::string("knowledge store: cannot ") + what + ": " +
                               sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  std::string text(int col) {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : "";
  }
  int64_t integer(int col) { return sqlite3_column_int64(stmt_, col); }
  double real(int col) { return sqlite3_column_double(stmt_, col); }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

inline void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error(std::string("knowledge store: ") + why);
  }
}

// BEGIN IMMEDIATE (takes the write lock now, so two processes never both decide to write the
// same rows); rolls back unless commit() was called.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace mk::knowledge::detail
