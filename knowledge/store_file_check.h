// Opening a store's SQLite file, shared by every component that opens it (the knowledge store,
// the run and session stores): the busy timeout, a check of the file before anything writes
// to it, and a bounded page cache. A damaged file is never repaired or replaced: the error names
// the file and tells the user to move it away. Header-only, so components with their own SQLite
// connection need no link dependency on the knowledge store.
#pragma once

#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace mk::knowledge {

// How long a write waits for another process's lock on the store (another `maxkernel`, the
// language server, a sqlite3 shell holding a transaction) before it fails with "database is
// locked". $MAXKERNEL_STORE_BUSY_TIMEOUT_MS overrides it (tests, slow shared disks).
inline int store_busy_timeout_ms() {
  constexpr int kDefaultMs = 15000;
  const char* env = std::getenv("MAXKERNEL_STORE_BUSY_TIMEOUT_MS");
  if (!env || !*env) return kDefaultMs;
  char* end = nullptr;
  const long ms = std::strtol(env, &end, 10);
  return *end == '\0' && ms >= 0 && ms <= 3600000 ? static_cast<int>(ms) : kDefaultMs;
}

// Each connection's page cache. SQLite's default is 2 MiB per connection, filled at once by the
// check on open (it reads every page; set after it, the cap frees the excess) and then by use as
// the store grows: the language server keeps three or four connections for a whole session, and
// its memory grew with the store file. The store is read by key, one row at a time, and the OS
// caches the file anyway, so a small cache is enough (bench/RESULTS.md, "load", run 7).
inline constexpr int kStorePageCacheKiB = 256;

// SQLite's codes for a file that is damaged (truncated, overwritten) or not a database at all.
inline bool is_damaged_file_error(int code) {
  const int primary = code & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

inline std::string damaged_file_message(const std::string& what, const std::filesystem::path& path,
                                        const std::string& reason) {
  const std::string p = path.string();
  return "the " + what + " " + p + " is damaged or not a SQLite database (" + reason +
         "); it was left as it is. Move it away with its -wal and -shm files, if any (e.g. mv " +
         p + " " + p + ".damaged), and run again: a new, empty store is made in its place";
}

// Reads the header and every page of the open database (PRAGMA quick_check: O(size), a few ms
// for a store of a few MB) without writing anything. Throws std::runtime_error with
// damaged_file_message when SQLite reports damage. A new, empty file passes.
inline void check_store_file(sqlite3* db, const std::string& what,
                             const std::filesystem::path& path) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &stmt, nullptr);
  std::string problem;
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(stmt, 0);
      const std::string verdict = text ? reinterpret_cast<const char*>(text) : "";
      if (verdict != "ok") problem = verdict.empty() ? "quick_check failed" : verdict;
      rc = SQLITE_OK;
    }
  }
  if (problem.empty() && rc != SQLITE_OK && rc != SQLITE_DONE) {
    if (!is_damaged_file_error(sqlite3_extended_errcode(db))) {
      const std::string why = sqlite3_errmsg(db);  // e.g. busy, I/O: not a verdict on the file
      sqlite3_finalize(stmt);
      throw std::runtime_error(what + " " + path.string() + ": " + why);
    }
    problem = sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  if (!problem.empty()) throw std::runtime_error(damaged_file_message(what, path, problem));
}

// What every store connection does once open, before anything writes: the file check, then the
// page-cache cap (after the check, so it also frees what the check read in).
inline void prepare_store_connection(sqlite3* db, const std::string& what,
                                     const std::filesystem::path& path) {
  check_store_file(db, what, path);
  const std::string cap = "PRAGMA cache_size=-" + std::to_string(kStorePageCacheKiB);  // in KiB
  char* err = nullptr;
  if (sqlite3_exec(db, cap.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw std::runtime_error(what + " " + path.string() + ": " + why);
  }
}

}  // namespace mk::knowledge
