#include "agents/orchestration/session_store.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "agents/orchestration/record_ids.h"
#include "knowledge/schema_migrations.h"

namespace mk::agents {

using nlohmann::json;

namespace {

// The session table's migrations (component "hitl" in component_schema). Append only.
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

constexpr knowledge::sql::SchemaComponent kSessionSchema{"hitl", kSessionMigrations};

using knowledge::sql::Statement;

std::string history_to_json(const std::vector<HistoryEntry>& history) {
  json out = json::array();
  for (const HistoryEntry& h : history)
    out.push_back(
        {{"phase", to_string(h.phase)}, {"event", h.event}, {"text", h.text}, {"at", h.at}});
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<HistoryEntry> history_from_json(const std::string& text) {
  std::vector<HistoryEntry> out;
  const json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_array()) return out;
  for (const json& h : parsed) {
    if (!h.is_object()) continue;
    out.push_back({hitl_phase_from_string(h.value("phase", "")), h.value("event", ""),
                   h.value("text", ""), h.value("at", int64_t{0})});
  }
  return out;
}

// Binds every column but id/created_at/updated_at, in kColumns order.
void bind_body(Statement& q, const SessionRecord& s) {
  q.text(s.uri)
      .text(s.kernel)
      .integer(s.start_version)
      .integer(s.doc_version)
      .text(to_string(s.phase))
      .text(to_string(s.status))
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
  std::string phase;
  std::string status;
  std::string history;
  knowledge::sql::Columns(q) >> s.id >> s.uri >> s.kernel >> s.start_version >> s.doc_version >>
      phase >> status >> history >> s.code >> s.proposed >> s.plan >> s.summary >> s.feedback >>
      s.run_id >> s.created_at >> s.updated_at;
  s.phase = hitl_phase_from_string(phase);
  s.status = session_status_from_string(status);
  s.history = history_from_json(history);
  return s;
}

}  // namespace

std::string new_session_id() {
  return timestamped_id('s');
}

SessionStore::SessionStore(const std::filesystem::path& path) : db_(path, "session store") {
  knowledge::sql::migrate(db_, kSessionSchema);
}

std::string SessionStore::create(SessionRecord session) {
  std::lock_guard lock(mutex_);
  if (session.id.empty()) session.id = new_session_id();
  session.created_at = session.updated_at = now_seconds();
  Statement q = Statement(db_, std::string("INSERT INTO hitl_sessions (") + kColumns +
                                   ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  q.text(session.id);
  bind_body(q, session);
  q.integer(session.created_at).integer(session.updated_at).run();
  return session.id;
}

void SessionStore::update(const SessionRecord& session) {
  std::lock_guard lock(mutex_);
  Statement q = Statement(
      db_,
      "UPDATE hitl_sessions SET uri=?, kernel=?, start_version=?, doc_version=?, phase=?, "
      "status=?, history_json=?, code=?, proposed=?, plan=?, summary=?, feedback=?, "
      "run_id=?, updated_at=? WHERE id=?");
  bind_body(q, session);
  q.integer(now_seconds()).text(session.id).run();
  if (db_.changes() == 0)
    throw std::runtime_error("session store: no session with id " + session.id);
}

std::optional<SessionRecord> SessionStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  Statement q =
      Statement(db_, std::string("SELECT ") + kColumns + " FROM hitl_sessions WHERE id = ?");
  q.text(id);
  if (!q.row()) return std::nullopt;
  return read_session(q);
}

std::vector<SessionRecord> SessionStore::list(int limit) {
  std::lock_guard lock(mutex_);
  Statement q = Statement(db_, std::string("SELECT ") + kColumns +
                                   " FROM hitl_sessions ORDER BY updated_at DESC, rowid DESC "
                                   "LIMIT ?");
  q.integer(limit);
  std::vector<SessionRecord> out;
  while (q.row()) out.push_back(read_session(q));
  return out;
}

}  // namespace mk::agents
