// Store: documents, chunks and BM25 retrieval over the FTS5 index.
#include <sqlite3.h>

#include <ctime>
#include <unordered_set>

#include "knowledge/sqlite_statement.h"
#include "knowledge/store.h"

namespace mk::knowledge {

using detail::Statement;

namespace {

// Column weights for bm25(): a hit in a section's heading path (which starts with the document
// title) says more about the passage than the same word somewhere in its body.
constexpr const char* kSearchSql = R"sql(
  SELECT c.id, d.title, c.heading, d.source, d.kind, c.body,
         snippet(chunks_fts, 1, '[', ']', '...', 24), bm25(chunks_fts, 2.0, 1.0) AS rank
  FROM chunks_fts
  JOIN chunks c ON c.id = chunks_fts.rowid
  JOIN documents d ON d.id = c.document_id
  WHERE chunks_fts MATCH ?1
    AND (?2 = '' OR d.kind = ?2)
    AND substr(d.source, 1, length(?3)) = ?3
  ORDER BY rank
  LIMIT ?4
)sql";

const char* kind_filter(SearchFilter::Kind kind) {
  switch (kind) {
    case SearchFilter::Kind::bundled:
      return "bundled";
    case SearchFilter::Kind::user:
      return "user";
    case SearchFilter::Kind::any:
      break;
  }
  return "";
}

// The whole prompt cost of a passage: header line plus text.
size_t passage_chars(const Passage& p) {
  return p.title.size() + p.heading.size() + p.source.size() + p.text.size() + 16;
}

}  // namespace

IndexOutcome Store::add_document(const std::string& source, const std::string& content,
                                 DocumentKind kind, const std::string& title) {
  detail::Transaction tx(db_);
  IndexOutcome outcome = index_document(source, content, kind, title);
  tx.commit();
  return outcome;
}

IndexOutcome Store::index_document(const std::string& source, const std::string& content,
                                   DocumentKind kind, const std::string& title) {
  const ChunkedDocument doc = chunk_document(source, valid_utf8(content));
  const std::string doc_title = valid_utf8(title.empty() ? doc.title : title);
  const std::string hash = content_hash(content);

  int64_t document_id = 0;
  {
    Statement find(db_,
                   "SELECT id, content_hash, kind, title, "
                   "(SELECT COUNT(*) FROM chunks WHERE document_id = documents.id) "
                   "FROM documents WHERE source = ?1");
    find.bind(1, source);
    if (find.step() == SQLITE_ROW) {
      document_id = find.integer(0);
      if (find.text(1) == hash && find.text(2) == to_string(kind) && find.text(3) == doc_title)
        return IndexOutcome{false, static_cast<int>(find.integer(4))};
    }
  }

  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (document_id != 0) {
    Statement drop_fts(db_,
                       "DELETE FROM chunks_fts WHERE rowid IN "
                       "(SELECT id FROM chunks WHERE document_id = ?1)");
    drop_fts.bind(1, document_id);
    drop_fts.run("drop a document's index entries");
    Statement drop(db_, "DELETE FROM chunks WHERE document_id = ?1");
    drop.bind(1, document_id);
    drop.run("drop a document's chunks");
    Statement update(db_,
                     "UPDATE documents SET title = ?2, kind = ?3, content_hash = ?4, "
                     "added_at = ?5 WHERE id = ?1");
    update.bind(1, document_id);
    update.bind(2, doc_title);
    update.bind(3, std::string(to_string(kind)));
    update.bind(4, hash);
    update.bind(5, now);
    update.run("update a document");
  } else {
    Statement insert(db_,
                     "INSERT INTO documents (source, title, kind, content_hash, added_at) "
                     "VALUES (?1, ?2, ?3, ?4, ?5)");
    insert.bind(1, source);
    insert.bind(2, doc_title);
    insert.bind(3, std::string(to_string(kind)));
    insert.bind(4, hash);
    insert.bind(5, now);
    insert.run("add a document");
    document_id = sqlite3_last_insert_rowid(db_);
  }

  Statement chunk(db_,
                  "INSERT INTO chunks (document_id, ordinal, heading, body) "
                  "VALUES (?1, ?2, ?3, ?4)");
  Statement fts(db_, "INSERT INTO chunks_fts (rowid, heading, body) VALUES (?1, ?2, ?3)");
  int64_t ordinal = 0;
  for (const Chunk& c : doc.chunks) {
    chunk.reset();
    chunk.bind(1, document_id);
    chunk.bind(2, ordinal++);
    chunk.bind(3, c.heading);
    chunk.bind(4, c.body);
    chunk.run("add a chunk");
    fts.reset();
    fts.bind(1, sqlite3_last_insert_rowid(db_));
    fts.bind(2, c.heading.empty() ? doc_title : doc_title + " > " + c.heading);
    fts.bind(3, c.body);
    fts.run("index a chunk");
  }
  return IndexOutcome{true, static_cast<int>(doc.chunks.size())};
}

bool Store::remove_document(const std::string& source) {
  detail::Transaction tx(db_);
  const bool removed = drop_document(source);
  tx.commit();
  return removed;
}

bool Store::drop_document(const std::string& source) {
  Statement drop_fts(db_,
                     "DELETE FROM chunks_fts WHERE rowid IN (SELECT c.id FROM chunks c "
                     "JOIN documents d ON d.id = c.document_id WHERE d.source = ?1)");
  drop_fts.bind(1, source);
  drop_fts.run("drop a document's index entries");
  // Its chunks go with it (ON DELETE CASCADE).
  Statement drop(db_, "DELETE FROM documents WHERE source = ?1");
  drop.bind(1, source);
  drop.run("remove a document");
  return sqlite3_changes(db_) > 0;
}

int64_t Store::document_count(SearchFilter::Kind kind) {
  Statement s(db_, "SELECT COUNT(*) FROM documents WHERE ?1 = '' OR kind = ?1");
  s.bind(1, std::string(kind_filter(kind)));
  return s.step() == SQLITE_ROW ? s.integer(0) : 0;
}

int64_t Store::chunk_count() {
  Statement s(db_, "SELECT COUNT(*) FROM chunks");
  return s.step() == SQLITE_ROW ? s.integer(0) : 0;
}

std::vector<Passage> Store::search(const std::string& query, int limit,
                                   const SearchFilter& filter) {
  if (!bundled_checked_) ensure_bundled_corpus();
  std::vector<Passage> passages;
  const std::string expression = fts_match_expression(query);
  if (expression.empty() || limit <= 0) return passages;

  Statement s(db_, kSearchSql);
  s.bind(1, expression);
  s.bind(2, std::string(kind_filter(filter.kind)));
  s.bind(3, filter.source_prefix);
  s.bind(4, static_cast<int64_t>(limit));
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    Passage p;
    p.chunk_id = s.integer(0);
    p.title = s.text(1);
    p.heading = s.text(2);
    p.source = s.text(3);
    p.kind = s.text(4) == "bundled" ? DocumentKind::bundled : DocumentKind::user;
    p.text = s.text(5);
    p.snippet = s.text(6);
    p.score = -s.real(7);
    passages.push_back(std::move(p));
  }
  if (rc != SQLITE_DONE)
    throw std::runtime_error("knowledge store: search failed: " + std::string(sqlite3_errmsg(db_)));
  return passages;
}

std::vector<Passage> Store::retrieve_for(const std::string& kernel_summary,
                                         const std::string& error_text, int token_budget) {
  std::vector<Passage> candidates;
  if (!error_text.empty()) candidates = search(error_text, 4);
  if (!kernel_summary.empty()) {
    for (Passage& p : search(kernel_summary, 6)) candidates.push_back(std::move(p));
  }

  std::vector<Passage> chosen;
  std::unordered_set<int64_t> seen;
  size_t remaining = token_budget > 0 ? static_cast<size_t>(token_budget) * 4 : 0;
  for (Passage& p : candidates) {
    if (!seen.insert(p.chunk_id).second) continue;
    const size_t cost = passage_chars(p);
    if (cost <= remaining) {
      remaining -= cost;
      chosen.push_back(std::move(p));
      continue;
    }
    // Cut the first passage that does not fit at a line end, if enough room is left for it to
    // say something; then stop (the rest ranks lower).
    constexpr size_t kSmallestUsefulCut = 240;
    const size_t header = cost - p.text.size();
    if (remaining >= header + kSmallestUsefulCut) {
      const std::string marker = "\n[...]";
      size_t keep = remaining - header - marker.size();
      const size_t line_end = p.text.rfind('\n', keep);
      if (line_end != std::string::npos && line_end > keep / 2) keep = line_end;
      // Never end inside a UTF-8 sequence.
      while (keep > 0 && (static_cast<unsigned char>(p.text[keep]) & 0xC0) == 0x80) --keep;
      p.text = p.text.substr(0, keep) + marker;
      chosen.push_back(std::move(p));
    }
    break;
  }
  return chosen;
}

}  // namespace mk::knowledge
