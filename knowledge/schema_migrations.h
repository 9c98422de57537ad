// One migration scheme for every table in the store file. Each component (the knowledge tables,
// the run tables, the HITL session table) owns an ordered, append-only list of migration steps;
// table component_schema records, per component, how many of its steps the file has had.
//
// Files made before this scheme counted the knowledge tables' version in PRAGMA user_version
// (the run and session tables were already in component_schema): a component that adopts
// user_version starts from that number the first time it is opened and is recorded in
// component_schema from then on. user_version is not written any more.
//
// A file whose recorded version is newer than the steps this build knows was written by a newer
// maxkernel: it is refused with a clear error and left as it is (never migrated or written).
#pragma once

#include <cstdint>
#include <span>

#include "knowledge/store_database.h"

namespace mk::knowledge::sql {

struct SchemaComponent {
  const char* name;                    // its key in component_schema: "knowledge", "runs", ...
  std::span<const char* const> steps;  // step i moves the tables from version i to i + 1
  bool adopts_user_version = false;    // see above; only the knowledge tables
};

// Applies the steps the file has not had, all in one immediate transaction, and records the
// version. Opening a file that is already current writes nothing.
void migrate(Database& db, const SchemaComponent& component);

// The version the file has for this component (0 for none).
int64_t schema_version(Database& db, const SchemaComponent& component);

}  // namespace mk::knowledge::sql
