// Store: keeping the store's copy of the bundled corpus current.
#include "knowledge/bundled_corpus.h"

#include <mutex>
#include <set>
#include <string>

#include "knowledge/store.h"

namespace mk::knowledge {

namespace {
constexpr const char* kVersionKey = "bundled_corpus_version";
}

int Store::ensure_bundled_corpus() {
  const std::lock_guard lock(bundled_mutex_);
  const std::string version = bundled_corpus_version();
  if (meta(kVersionKey) == version) {
    bundled_checked_ = true;
    return 0;
  }

  sql::Transaction tx(db_);
  // Another process may have indexed it while this one waited for the write lock.
  if (meta(kVersionKey) == version) {
    bundled_checked_ = true;
    return 0;
  }
  int indexed = 0;
  std::set<std::string> shipped;
  for (const BundledDocument& doc : bundled_corpus()) {
    shipped.insert(doc.source);
    if (index_document(doc.source, doc.content, DocumentKind::bundled, "").changed) ++indexed;
  }
  std::vector<std::string> stale;
  {
    sql::Statement s(db_, "SELECT source FROM documents WHERE kind = 'bundled'");
    while (s.row()) {
      if (!shipped.contains(s.col_text(0))) stale.push_back(s.col_text(0));
    }
  }
  for (const std::string& source : stale) drop_document(source);
  set_meta(kVersionKey, version);
  tx.commit();
  bundled_checked_ = true;
  return indexed;
}

}  // namespace mk::knowledge
