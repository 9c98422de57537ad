// Store: the tuning cache, one row per tuned configuration.
#include <ctime>

#include "knowledge/store.h"

namespace mk::knowledge {

using sql::Statement;

std::optional<std::string> Store::cached_tuning(const std::string& key) {
  Statement s(db_, "SELECT result_json FROM tuning_cache WHERE key = ?1");
  s.text(key);
  if (s.row()) return s.col_text(0);
  return std::nullopt;
}

void Store::store_tuning(const std::string& key, const std::string& host_fingerprint,
                         const std::string& config_json, const std::string& result_json) {
  Statement s(db_,
              "INSERT OR REPLACE INTO tuning_cache (key, host_fingerprint, config_json, "
              "result_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5)");
  s.text(key).text(host_fingerprint).text(config_json).text(result_json);
  s.integer(static_cast<int64_t>(std::time(nullptr)));
  s.run("write the tuning cache");
}

int64_t Store::cached_tuning_count() {
  Statement s(db_, "SELECT COUNT(*) FROM tuning_cache");
  return s.row() ? s.col_int(0) : 0;
}

}  // namespace mk::knowledge
