#include "agents/orchestration/session_store.h"

#include "agents/orchestration/sqlite_component.h"

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

using sql::now_seconds;
using Statement = sql::Query;

Statement query(sqlite3* db, const std::string& statement) {
  return Statement(db, statement, "session store");
}

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
  return sql::timestamped_id('s');
}

SessionStore::SessionStore(const std::filesystem::path& path) : path_(path) {
  db_ = sql::open_database(path, "session store");
  try {
    migrate();
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

SessionStore::~SessionStore() {
  sqlite3_close(db_);
}

void SessionStore::exec(const char* statement) {
  sql::exec(db_, statement, "session store " + path_.string());
}

void SessionStore::migrate() {
  sql::migrate_component(db_, "hitl", kSessionMigrations, std::size(kSessionMigrations),
                         "session store " + path_.string());
}

std::string SessionStore::create(SessionRecord session) {
  std::lock_guard lock(mutex_);
  if (session.id.empty()) session.id = new_session_id();
  session.created_at = session.updated_at = now_seconds();
  Statement q = query(db_, std::string("INSERT INTO hitl_sessions (") + kColumns +
                               ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  q.text(session.id);
  bind_body(q, session);
  q.integer(session.created_at).integer(session.updated_at).run();
  return session.id;
}

void SessionStore::update(const SessionRecord& session) {
  std::lock_guard lock(mutex_);
  Statement q =
      query(db_,
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
  Statement q = query(db_, std::string("SELECT ") + kColumns + " FROM hitl_sessions WHERE id = ?");
  q.text(id);
  if (!q.row()) return std::nullopt;
  return read_session(q);
}

std::vector<SessionRecord> SessionStore::list(int limit) {
  std::lock_guard lock(mutex_);
  Statement q = query(db_, std::string("SELECT ") + kColumns +
                               " FROM hitl_sessions ORDER BY updated_at DESC, rowid DESC "
                               "LIMIT ?");
  q.integer(limit);
  std::vector<SessionRecord> out;
  while (q.row()) out.push_back(read_session(q));
  return out;
}

}  // namespace mk::agents
