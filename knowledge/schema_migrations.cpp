#include "knowledge/schema_migrations.h"

#include <stdexcept>
#include <string>

namespace mk::knowledge::sql {

namespace {

struct FileVersion {
  int64_t version = 0;
  bool recorded = false;  // in component_schema (else adopted from user_version, or none)
};

FileVersion file_version(Database& db, const SchemaComponent& component) {
  Statement table(db,
                  "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'component_schema'");
  if (table.row()) {
    Statement q(db, "SELECT version FROM component_schema WHERE component = ?1");
    q.text(component.name);
    if (q.row()) return {q.col_int(0), true};
  }
  if (component.adopts_user_version) {
    Statement q(db, "PRAGMA user_version");
    if (q.row()) return {q.col_int(0), false};
  }
  return {};
}

void refuse_newer(const Database& db, const SchemaComponent& component, int64_t version) {
  const auto known = static_cast<int64_t>(component.steps.size());
  if (version <= known) return;
  throw std::runtime_error(
      db.label() + ": its " + component.name + " tables are at schema version " +
      std::to_string(version) + ", newer than this build of maxkernel knows (" +
      std::to_string(known) +
      "); it was left as it is. Use the newer maxkernel that wrote it, or point "
      "$MAXKERNEL_STORE at another file");
}

}  // namespace

int64_t schema_version(Database& db, const SchemaComponent& component) {
  return file_version(db, component).version;
}

void migrate(Database& db, const SchemaComponent& component) {
  const auto known = static_cast<int64_t>(component.steps.size());
  FileVersion seen = file_version(db, component);
  refuse_newer(db, component, seen.version);
  if (seen.recorded && seen.version == known) return;

  Transaction tx(db);
  // Re-read under the write lock: another process opening the same file may have migrated it
  // while this one waited.
  seen = file_version(db, component);
  refuse_newer(db, component, seen.version);
  if (seen.recorded && seen.version == known) return;
  db.exec(
      "CREATE TABLE IF NOT EXISTS component_schema (component TEXT PRIMARY KEY, "
      "version INTEGER NOT NULL)");
  for (int64_t v = seen.version; v < known; ++v) db.exec(component.steps[static_cast<size_t>(v)]);
  Statement record(db,
                   "INSERT OR REPLACE INTO component_schema (component, version) VALUES (?1, ?2)");
  record.text(component.name).integer(known).run();
  tx.commit();
}

}  // namespace mk::knowledge::sql
