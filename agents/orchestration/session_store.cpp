#include "agents/orchestration/session_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

namespace mk::agents {

using nlohmann::json;

namespace {

// The session table's migrations, tracked in component_schema under "hitl" (the knowledge
// store's user_version and the run tables' "runs" entry are left alone). Append only.
const char* const kSessionMigrations[] = {
    R"sql(
    CREATE TABLE hitl_sessions (
      id TEXT PRIMARY KEY, uri TEXT NOT NULL, kernel TEXT NOT NULL,
      start_version INTEGER NOT NULL, doc_version INTEGER NOT NULL, phase TEXT NOT NULL,
      status TEXT NOT NULL, history_json TEXT NOT NULL, code TEXT NOT NULL,
      proposed TEXT NOT NULL, plan TEXT NOT NULL, summary TEXT NOT NULL, feedback TEXT NOT NULL,
      run_id TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
    CREATE INDEX hitl_sessions_by_update ON hitl_sessions(updated_at);
    )sql",
};

constexpr const char* kColumns =
    "id, uri, kernel, start_version, doc_version, phase, status, history_json, code, proposed, "
    "plan, summary, feedback, run_id, created_at, updated_at";

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("session store: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& text(const std::string& s) {
    sqlite3_bind_text(stmt_, ++slot_, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& integer(int64_t v) {
    sqlite3_bind_int64(stmt_, ++slot_, v);
    return *this;
  }
  bool row() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE)
      throw std::runtime_error(std::string("session store: ") + sqlite3_errmsg(db_));
    return false;
  }
  void run() { row(); }
  std::string col_text(int c) {
    const auto* p = sqlite3_column_text(stmt_, c);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, c)))
             : std::string();
  }
  int64_t col_int(int c) { return sqlite3_column_int64(stmt_, c); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int slot_ = 0;
};

std::string history_to_json(const std::vector<HistoryEntry>& history) {
  json out = json::array();
  for (const HistoryEntry& h : history)
    out.push_back({{"phase", h.phase}, {"event", h.event}, {"text", h.text}, {"at", h.at}});
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<HistoryEntry> history_from_json(const std::string& text) {
  std::vector<HistoryEntry> out;
  const json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_array()) return out;
  for (const json& h : parsed) {
    if (!h.is_object()) continue;
    out.push_back({h.value("phase", ""), h.value("event", ""), h.value("text", ""),
                   h.value("at", int64_t{0})});
  }
  return out;
}

// Binds every column but id/created_at/updated_at, in kColumns order.
void bind_body(Statement& q, const SessionRecord& s) {
  q.text(s.uri)
      .text(s.kernel)
      .integer(s.start_version)
      .integer(s.doc_version)
      .text(s.phase)
      .text(s.status)
      .text(history_to_json(s.history))
      .text(s.code)
      .text(s.proposed)
      .text(s.plan)
      .text(s.summary)
      .text(s.feedback)
      .text(s.run_id);
}

SessionRecord read_session(Statement& q) {
  SessionRecord s;
  s.id = q.col_text(0);
  s.uri = q.col_text(1);
  s.kernel = q.col_text(2);
  s.start_version = q.col_int(3);
  s.doc_version = q.col_int(4);
  s.phase = q.col_text(5);
  s.status = q.col_text(6);
  s.history = history_from_json(q.col_text(7));
  s.code = q.col_text(8);
  s.proposed = q.col_text(9);
  s.plan = q.col_text(10);
  s.summary = q.col_text(11);
  s.feedback = q.col_text(12);
  s.run_id = q.col_text(13);
  s.created_at = q.col_int(14);
  s.updated_at = q.col_int(15);
  return s;
}

}  // namespace

std::string new_session_id() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", rd() & 0xffffu);
  return std::string("s") + stamp + "-" + suffix;
}

SessionStore::SessionStore(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open the session store " + path.string() + ": " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL");
  migrate();
}

SessionStore::~SessionStore() {
  sqlite3_close(db_);
}

void SessionStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("session store " + path_.string() + ": " + why);
  }
}

void SessionStore::migrate() {
  exec(
      "CREATE TABLE IF NOT EXISTS component_schema (component TEXT PRIMARY KEY, "
      "version INTEGER NOT NULL)");
  exec("BEGIN IMMEDIATE");
  try {
    int64_t version = 0;
    {
      Statement q(db_, "SELECT version FROM component_schema WHERE component = 'hitl'");
      if (q.row()) version = q.col_int(0);
    }
    const auto total = static_cast<int64_t>(std::size(kSessionMigrations));
    for (int64_t v = version; v < total; ++v) exec(kSessionMigrations[v]);
    if (version < total) {
      Statement q(db_,
                  "INSERT OR REPLACE INTO component_schema(component, version) VALUES ('hitl', ?)");
      q.integer(total).run();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::string SessionStore::create(SessionRecord session) {
  std::lock_guard lock(mutex_);
  if (session.id.empty()) session.id = new_session_id();
  session.created_at = session.updated_at = now_seconds();
  Statement q(db_, std::string("INSERT INTO hitl_sessions (") + kColumns +
                       ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  q.text(session.id);
  bind_body(q, session);
  q.integer(session.created_at).integer(session.updated_at).run();
  return session.id;
}

void SessionStore::update(const SessionRecord& session) {
  std::lock_guard lock(mutex_);
  Statement q(db_,
              "UPDATE hitl_sessions SET uri=?, kernel=?, start_version=?, doc_version=?, phase=?, "
              "status=?, history_json=?, code=?, proposed=?, plan=?, summary=?, feedback=?, "
              "run_id=?, updated_at=? WHERE id=?");
  bind_body(q, session);
  q.integer(now_seconds()).text(session.id).run();
  if (sqlite3_changes(db_) == 0)
    throw std::runtime_error("session store: no session with id " + session.id);
}

std::optional<SessionRecord> SessionStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  Statement q(db_, std::string("SELECT ") + kColumns + " FROM hitl_sessions WHERE id = ?");
  q.text(id);
  if (!q.row()) return std::nullopt;
  return read_session(q);
}

std::vector<SessionRecord> SessionStore::list(int limit) {
  std::lock_guard lock(mutex_);
  Statement q(db_, std::string("SELECT ") + kColumns +
                       " FROM hitl_sessions ORDER BY updated_at DESC, rowid DESC "
                       "LIMIT ?");
  q.integer(limit);
  std::vector<SessionRecord> out;
  while (q.row()) out.push_back(read_session(q));
  return out;
}

}  // namespace mk::agents
