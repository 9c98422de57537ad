// Store: documents, chunks and BM25 retrieval over the FTS5 index.
#include <ctime>
#include <unordered_set>

#include "knowledge/store.h"

namespace mk::knowledge {

using sql::Statement;

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
  sql::Transaction tx(db_);
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
    find.text(source);
    if (find.row()) {
      document_id = find.col_int(0);
      if (find.col_text(1) == hash && find.col_text(2) == to_string(kind) &&
          find.col_text(3) == doc_title)
        return IndexOutcome{false, static_cast<int>(find.col_int(4))};
    }
  }

  if (document_id != 0) drop_chunks(document_id);
  // A changed document keeps its row (and id); a new one gets its row here.
  Statement upsert(db_,
                   "INSERT INTO documents (source, title, kind, content_hash, added_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (source) DO UPDATE SET "
                   "title = excluded.title, kind = excluded.kind, "
                   "content_hash = excluded.content_hash, added_at = excluded.added_at");
  upsert.text(source).text(doc_title).text(std::string(to_string(kind))).text(hash);
  upsert.integer(static_cast<int64_t>(std::time(nullptr))).run("write a document");
  if (document_id == 0) document_id = db_.last_insert_rowid();

  Statement chunk(db_,
                  "INSERT INTO chunks (document_id, ordinal, heading, body) "
                  "VALUES (?1, ?2, ?3, ?4)");
  Statement fts(db_, "INSERT INTO chunks_fts (rowid, heading, body) VALUES (?1, ?2, ?3)");
  int64_t ordinal = 0;
  for (const Chunk& c : doc.chunks) {
    chunk.reset();
    chunk.integer(document_id).integer(ordinal++).text(c.heading).text(c.body).run("add a chunk");
    fts.reset();
    fts.integer(db_.last_insert_rowid())
        .text(c.heading.empty() ? doc_title : doc_title + " > " + c.heading)
        .text(c.body)
        .run("index a chunk");
  }
  return IndexOutcome{true, static_cast<int>(doc.chunks.size())};
}

bool Store::remove_document(const std::string& source) {
  sql::Transaction tx(db_);
  const bool removed = drop_document(source);
  tx.commit();
  return removed;
}

void Store::drop_chunks(int64_t document_id) {
  Statement drop_fts(db_,
                     "DELETE FROM chunks_fts WHERE rowid IN "
                     "(SELECT id FROM chunks WHERE document_id = ?1)");
  drop_fts.integer(document_id).run("drop a document's index entries");
  Statement drop(db_, "DELETE FROM chunks WHERE document_id = ?1");
  drop.integer(document_id).run("drop a document's chunks");
}

bool Store::drop_document(const std::string& source) {
  int64_t document_id = 0;
  {
    Statement find(db_, "SELECT id FROM documents WHERE source = ?1");
    find.text(source);
    if (!find.row()) return false;
    document_id = find.col_int(0);
  }
  drop_chunks(document_id);
  Statement drop(db_, "DELETE FROM documents WHERE id = ?1");
  drop.integer(document_id).run("remove a document");
  return true;
}

int64_t Store::document_count(SearchFilter::Kind kind) {
  Statement s(db_, "SELECT COUNT(*) FROM documents WHERE ?1 = '' OR kind = ?1");
  s.text(kind_filter(kind));
  return s.row() ? s.col_int(0) : 0;
}

int64_t Store::chunk_count() {
  Statement s(db_, "SELECT COUNT(*) FROM chunks");
  return s.row() ? s.col_int(0) : 0;
}

std::vector<Passage> Store::search(const std::string& query, int limit,
                                   const SearchFilter& filter) {
  if (!bundled_checked_) ensure_bundled_corpus();
  std::vector<Passage> passages;
  const std::string expression = fts_match_expression(query);
  if (expression.empty() || limit <= 0) return passages;

  Statement s(db_, kSearchSql);
  s.text(expression).text(kind_filter(filter.kind)).text(filter.source_prefix).integer(limit);
  std::string kind;
  while (s.row()) {
    Passage p;
    sql::Columns(s) >> p.chunk_id >> p.title >> p.heading >> p.source >> kind >> p.text >>
        p.snippet >> p.score;
    p.kind = kind == "bundled" ? DocumentKind::bundled : DocumentKind::user;
    p.score = -p.score;  // bm25() ranks better passages lower
    passages.push_back(std::move(p));
  }
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
