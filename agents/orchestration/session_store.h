// "Optimize step by step" (HITL) sessions, persisted in the store file beside the runs (own
// table, own migration list: component "hitl" of knowledge/schema_migrations.h). Closing the
// editor or restarting the server loses nothing: a session is resumed from its saved phase.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/hitl_phase.h"
#include "agents/orchestration/record_status.h"
#include "knowledge/store_database.h"

namespace mk::agents {

// One thing that happened in a session, oldest first.
struct HistoryEntry {
  HitlPhase phase = HitlPhase::plan;  // the phase the session was in
  std::string event;  // "result", "approved", "feedback", "rejected", "applied", "skipped", ...
  std::string text;   // the result summary, the user's feedback, the reason
  int64_t at = 0;     // unix seconds
};

struct SessionRecord {
  std::string id;                     // "s20261130-051402-3fa2"
  std::string uri;                    // the document the session edits
  std::string kernel;                 // kernel (entry point) name
  int64_t start_version = 0;          // document version when the session started
  int64_t doc_version = 0;            // document version the session last saw (edits are versioned)
  HitlPhase phase = HitlPhase::plan;  // stored by name ("plan", "implement", ...)
  SessionStatus status = SessionStatus::running;
  std::vector<HistoryEntry> history;
  std::string code;      // the current candidate (the document text the session works on)
  std::string proposed;  // a proposed candidate not yet accepted by the user ("" = none)
  std::string plan;      // the plan markdown (as last read back from the plan file)
  std::string summary;   // the last phase result, shown in the pending question
  std::string feedback;  // the user's feedback for the next attempt ("" = none)
  std::string run_id;    // the RunStore run (mode "hitl") holding the evaluated candidates
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

class SessionStore {
 public:
  // Opens (creating if needed) the database and migrates the session table. Throws
  // std::runtime_error with the path and SQLite's reason.
  explicit SessionStore(const std::filesystem::path& path);

  // Stores a new session (fills id when empty, created_at/updated_at) and returns its id.
  std::string create(SessionRecord session);
  void update(const SessionRecord& session);  // by id; bumps updated_at
  std::optional<SessionRecord> get(const std::string& id);
  std::vector<SessionRecord> list(int limit = 50);  // most recently updated first
  const std::filesystem::path& path() const { return db_.path(); }

 private:
  knowledge::sql::Database db_;
  std::mutex mutex_;
};

std::string new_session_id();

}  // namespace mk::agents
