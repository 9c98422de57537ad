// What the run store and the HITL session store share: opening the knowledge store's SQLite
// file (WAL, busy timeout), per-component migrations tracked in `component_schema` (so they never
// collide with the knowledge store's own user_version list), a small prepared-statement helper
// and time-stamped ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace mk::agents::sql {

// Throws std::runtime_error("cannot open the <what> PATH: reason"), or, for a damaged file or
// one that is not a database, "the <what> PATH is damaged ..." with what to do (the file is
// left untouched). Waits up to knowledge::store_busy_timeout_ms() for other writers.
sqlite3* open_database(const std::filesystem::path& path, const std::string& what);
void exec(sqlite3* db, const char* statement, const std::string& what);
// Applies migrations[version..count) of `component` in one immediate transaction.
void migrate_component(sqlite3* db, const char* component, const char* const* migrations,
                       size_t count, const std::string& what);

int64_t now_seconds();
std::string timestamped_id(char prefix);  // "r20261130-051402-3fa2"

// Binds parameters in order, reads columns by index; errors name `what` and SQLite's reason.
class Query {
 public:
  Query(sqlite3* db, const std::string& statement, std::string what);
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& text(const std::string& s);
  Query& integer(int64_t v);
  Query& maybe_integer(const std::optional<int64_t>& v);
  Query& maybe_real(const std::optional<double>& v);
  bool row();  // true while there is a row; throws on errors
  void run() { row(); }
  std::string col_text(int c);
  int64_t col_int(int c);
  std::optional<int64_t> col_maybe_int(int c);
  std::optional<double> col_maybe_real(int c);

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;
  int slot_ = 0;
};

}  // namespace mk::agents::sql
