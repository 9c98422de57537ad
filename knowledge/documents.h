// Documents in the knowledge store: plain structs for indexing and retrieval, plus the pure
// functions behind them (chunking by headings, free text -> safe FTS5 query). The SQLite side
// lives in Store (documents.cpp); these functions are separate so tests can check them alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mk::knowledge {

enum class DocumentKind { bundled, user };
const char* to_string(DocumentKind kind);

// One retrievable section of a document.
struct Chunk {
  std::string heading;  // section path under the document title, e.g. "Block shapes > Squeezed"
  std::string body;
};

// A document split into focused passages: markdown by headings (ignoring '#' inside code
// fences), Python at top-level def/class, plain text at blank lines. Any piece longer than
// max_chars is split again at paragraph (then line) boundaries.
struct ChunkedDocument {
  std::string title;  // markdown: the first '# ' heading; otherwise the file name
  std::vector<Chunk> chunks;
};
ChunkedDocument chunk_document(const std::string& source, const std::string& content,
                               size_t max_chars = 1800);

// Free text (an error message, "matmul tiling bf16 v5e") -> an FTS5 MATCH expression that
// cannot be a syntax error: word terms, each double-quoted, joined by OR; FTS operators,
// quotes, parentheses, stars and stop words are dropped. Empty when no usable term remains.
std::string fts_match_expression(const std::string& text, size_t max_terms = 48);

// The text with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD,
// so a Latin-1 file indexes and prints like any other.
std::string valid_utf8(const std::string& text);

// A 64-bit FNV-1a hash in hex: detects changed content when a file is added again.
std::string content_hash(const std::string& content);

struct Passage {
  int64_t chunk_id = 0;
  std::string title;    // document title
  std::string heading;  // section path inside the document ("" for the document's opening)
  std::string source;   // file path, or "bundled/<name>.md" for the bundled corpus
  DocumentKind kind = DocumentKind::user;
  std::string snippet;  // the matching part, with [matches] marked
  std::string text;     // the full passage (what an agent's prompt receives)
  double score = 0;     // BM25 relevance, higher is better (negated SQLite bm25())
};

struct SearchFilter {
  enum class Kind { any, bundled, user } kind = Kind::any;
  std::string source_prefix;  // only documents whose source starts with this
};

// What adding one file did.
struct IndexOutcome {
  bool changed = false;  // false: same content already indexed (a no-op)
  int chunks = 0;        // chunks now indexed for the document
};

// Approximate prompt tokens of a text (chars / 4), the budget unit of retrieve_for.
inline size_t approx_tokens(size_t chars) {
  return (chars + 3) / 4;
}

}  // namespace mk::knowledge
