// The knowledge store's documents: chunking, safe FTS5 queries, BM25 retrieval over the bundled
// corpus, re-adding files, budgets, and upgrading a store created by an older schema.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "knowledge/bundled_corpus.h"
#include "knowledge/documents.h"
#include "knowledge/store.h"

namespace mk::knowledge {
namespace {

namespace fs = std::filesystem;

class TempStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mk-knowledge-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path db() const { return dir_ / "store.sqlite"; }
  fs::path dir_;
};

// The exact text JAX 0.10.2 raised when exporting a kernel with a (7, 128) block for TPU.
constexpr const char* kBlockShapeError =
    "ValueError: The Pallas TPU lowering currently requires that the last two dimensions of your "
    "block shape are divisible by 8 and 128 respectively, or be equal to the respective "
    "dimensions of the overall array. Block spec for args[0] in pallas_call copy_kernel at "
    "/tmp/collect.py:14 has block shape (Blocked(block_size=7), Blocked(block_size=128)), array "
    "shape (56, 256), and index_map { lambda ; a:i32[] b:i32[]. let  in (a, b) }, in memory "
    "space <MemorySpace.DEFAULT: 'default'>.\nSee details at "
    "https://docs.jax.dev/en/latest/pallas/grid_blockspec.html#pallas-blockspec";

TEST(Chunking, SplitsMarkdownByHeadingsOutsideCodeFences) {
  const std::string md =
      "# Guide\nopening words\n## Tiling\nuse big tiles\n```python\n# not a heading\nx = 1\n```\n"
      "### Lanes\nlast dim 128\n## Empty\n## Memory\nvmem facts\n";
  const ChunkedDocument doc = chunk_document("guide.md", md);
  EXPECT_EQ(doc.title, "Guide");
  ASSERT_EQ(doc.chunks.size(), 4u);
  EXPECT_EQ(doc.chunks[0].heading, "");
  EXPECT_EQ(doc.chunks[0].body, "opening words");
  EXPECT_EQ(doc.chunks[1].heading, "Tiling");
  EXPECT_NE(doc.chunks[1].body.find("# not a heading"), std::string::npos);
  EXPECT_EQ(doc.chunks[2].heading, "Tiling > Lanes");
  EXPECT_EQ(doc.chunks[3].heading, "Memory");  // the empty section made no chunk
}

TEST(Chunking, SplitsLongSectionsAndOtherFileKinds) {
  std::string body;
  for (int i = 0; i < 40; ++i)
    body += "paragraph " + std::to_string(i) + " " + std::string(80, 'x') + "\n\n";
  const ChunkedDocument md = chunk_document("long.md", "# Long\n## Part\n" + body, 500);
  ASSERT_GT(md.chunks.size(), 5u);
  for (const Chunk& c : md.chunks) {
    EXPECT_LE(c.body.size(), 500u);
    EXPECT_EQ(c.heading, "Part");
  }
  // One enormous line is cut, not truncated.
  const ChunkedDocument one_line = chunk_document("one.txt", std::string(5000, 'q'), 1800);
  size_t kept = 0;
  for (const Chunk& c : one_line.chunks) {
    EXPECT_LE(c.body.size(), 1800u);
    kept += c.body.size();
  }
  EXPECT_EQ(kept, 5000u);
  const ChunkedDocument py = chunk_document(
      "k.py", "import jax\n\n@jax.jit\ndef f(x):\n  return x\n\nclass Spec:\n  pass\n");
  EXPECT_EQ(py.title, "k.py");
  ASSERT_EQ(py.chunks.size(), 3u);
  EXPECT_EQ(py.chunks[1].heading, "f");
  EXPECT_TRUE(py.chunks[1].body.starts_with("@jax.jit"));
  EXPECT_EQ(py.chunks[2].heading, "Spec");
}

TEST(Chunking, MalformedUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(valid_utf8("caf\xe9 ok"), "caf\xEF\xBF\xBD ok");
  EXPECT_EQ(valid_utf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");     // well-formed stays
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");    // overlong '/'
  EXPECT_EQ(valid_utf8("x\xE2\x82"), "x\xEF\xBF\xBD\xEF\xBF\xBD");  // cut short
}

TEST(FtsQuery, QuotesWordsAndDropsSyntax) {
  EXPECT_EQ(fts_match_expression("matmul tiling bf16 v5e"),
            "\"matmul\" OR \"tiling\" OR \"bf16\" OR \"v5e\"");
  EXPECT_EQ(fts_match_expression("\"AND\" (tiling) NOT* vmem:limit -grid ^lanes"),
            "\"tiling\" OR \"vmem\" OR \"limit\" OR \"grid\" OR \"lanes\"");
  EXPECT_EQ(fts_match_expression("(((\"*\")))  ^ - : ' \""), "");
  EXPECT_EQ(fts_match_expression("block block Block 8 128"), "\"block\" OR \"8\" OR \"128\"");
}

TEST_F(TempStore, HostileQueriesNeverThrow) {
  Store store(db());
  const std::string hostile[] = {"\"",
                                 "\"\"\"",
                                 "(",
                                 "a AND",
                                 "NOT NOT NOT",
                                 "*",
                                 "col:term",
                                 "NEAR(a b",
                                 "}{][)(",
                                 "x OR OR y",
                                 "'; DROP TABLE documents; --",
                                 "^start",
                                 "\xff\xfe\x80",
                                 std::string(5000, '('),
                                 std::string("nul\0byte", 8),
                                 ""};
  for (const std::string& q : hostile) {
    EXPECT_NO_THROW(store.search(q, 5)) << q;
    EXPECT_NO_THROW(store.retrieve_for(q, q, 200)) << q;
  }
  EXPECT_GT(store.document_count(), 0);  // nothing was dropped
}

TEST_F(TempStore, RealBlockShapeErrorFindsTheBlockShapePassageFirst) {
  Store store(db());
  const auto passages = store.search(kBlockShapeError, 5);
  ASSERT_FALSE(passages.empty());
  EXPECT_NE(passages[0].heading.find("divisible by 8 and 128"), std::string::npos)
      << passages[0].title << " > " << passages[0].heading;
  EXPECT_EQ(passages[0].kind, DocumentKind::bundled);
  for (size_t i = 1; i < passages.size(); ++i) EXPECT_LE(passages[i].score, passages[i - 1].score);
}

TEST_F(TempStore, AccumulatorQueryFindsTheStrategyEntry) {
  Store store(db());
  const auto passages = store.search("accumulator float32 scratch", 3);
  ASSERT_FALSE(passages.empty());
  EXPECT_EQ(passages[0].source, "bundled/optimization_strategies.md");
  EXPECT_NE(passages[0].heading.find("f32 VMEM scratch"), std::string::npos) << passages[0].heading;
  EXPECT_NE(passages[0].snippet.find('['), std::string::npos);  // matches are marked
}

TEST_F(TempStore, BundledCorpusIsIndexedOnceAndRetiredDocumentsDropped) {
  {
    Store store(db());
    EXPECT_EQ(store.ensure_bundled_corpus(), static_cast<int>(bundled_corpus().size()));
    EXPECT_EQ(store.ensure_bundled_corpus(), 0);
    EXPECT_EQ(store.document_count(SearchFilter::Kind::bundled),
              static_cast<int64_t>(bundled_corpus().size()));
    store.add_document("bundled/retired.md", "# Retired\nold advice about zebras\n",
                       DocumentKind::bundled);
  }
  {
    // A store written by a build with another corpus version.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(raw, "UPDATE meta SET value = 'older' WHERE key = 'bundled_corpus_version'",
                     nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(raw);
  }
  Store store(db());
  EXPECT_TRUE(store.search("zebras", 5).empty());  // first use re-synced the bundled corpus
  EXPECT_EQ(store.document_count(SearchFilter::Kind::bundled),
            static_cast<int64_t>(bundled_corpus().size()));
}

TEST_F(TempStore, ReAddingUnchangedIsANoOpAndChangedReplacesChunks) {
  Store store(db());
  const std::string v1 = "# Notes\n## Walrus\nthe walrus tiling trick\n## Otter\notter facts\n";
  const IndexOutcome first = store.add_document("/notes.md", v1, DocumentKind::user);
  EXPECT_TRUE(first.changed);
  EXPECT_EQ(first.chunks, 2);
  const int64_t chunks_after_first = store.chunk_count();

  const IndexOutcome again = store.add_document("/notes.md", v1, DocumentKind::user);
  EXPECT_FALSE(again.changed);
  EXPECT_EQ(again.chunks, 2);
  EXPECT_EQ(store.chunk_count(), chunks_after_first);

  const std::string v2 = "# Notes\n## Narwhal\nthe narwhal layout\n";
  const IndexOutcome changed = store.add_document("/notes.md", v2, DocumentKind::user);
  EXPECT_TRUE(changed.changed);
  EXPECT_EQ(changed.chunks, 1);
  EXPECT_EQ(store.chunk_count(), chunks_after_first - 1);
  EXPECT_TRUE(store.search("walrus otter", 5).empty());
  const auto found = store.search("narwhal", 5);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].source, "/notes.md");
  EXPECT_EQ(found[0].title, "Notes");
  EXPECT_EQ(found[0].heading, "Narwhal");

  EXPECT_TRUE(store.remove_document("/notes.md"));
  EXPECT_TRUE(store.search("narwhal", 5).empty());
  EXPECT_FALSE(store.remove_document("/notes.md"));
}

TEST_F(TempStore, FiltersByKindAndSourcePrefix) {
  Store store(db());
  store.add_document("/team/a.md", "# A\nblock shape rules for our team\n", DocumentKind::user);
  store.add_document("/other/b.md", "# B\nblock shape rules elsewhere\n", DocumentKind::user);
  SearchFilter user;
  user.kind = SearchFilter::Kind::user;
  const auto mine = store.search("block shape", 10, user);
  ASSERT_EQ(mine.size(), 2u);
  for (const Passage& p : mine) EXPECT_EQ(p.kind, DocumentKind::user);
  SearchFilter team;
  team.source_prefix = "/team/";
  const auto team_only = store.search("block shape", 10, team);
  ASSERT_EQ(team_only.size(), 1u);
  EXPECT_EQ(team_only[0].source, "/team/a.md");
  SearchFilter bundled;
  bundled.kind = SearchFilter::Kind::bundled;
  for (const Passage& p : store.search("block shape", 10, bundled))
    EXPECT_EQ(p.kind, DocumentKind::bundled);
}

TEST_F(TempStore, RetrieveForPutsErrorPassagesFirstAndKeepsToTheBudget) {
  Store store(db());
  const auto error_only = store.search(kBlockShapeError, 1);
  ASSERT_EQ(error_only.size(), 1u);
  for (int budget : {60, 300, 1200, 4000}) {
    const auto passages =
        store.retrieve_for("matmul kernel bf16 tiles K loop accumulator", kBlockShapeError, budget);
    size_t chars = 0;
    std::set<int64_t> ids;
    for (const Passage& p : passages) {
      chars += p.title.size() + p.heading.size() + p.source.size() + p.text.size() + 16;
      EXPECT_TRUE(ids.insert(p.chunk_id).second) << "passage twice";
    }
    EXPECT_LE(chars, static_cast<size_t>(budget) * 4) << budget;
    if (budget >= 1200) {
      ASSERT_GE(passages.size(), 2u);
      EXPECT_EQ(passages[0].chunk_id, error_only[0].chunk_id);
    }
  }
  const auto big = store.retrieve_for("matmul kernel bf16 tiles K loop accumulator", "", 100000);
  EXPECT_GE(big.size(), 3u);
}

TEST_F(TempStore, UpgradesAStoreCreatedWithTheVersion2Schema) {
  {
    // The schema as version 2 shipped it (evaluation cache and model checks only).
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    const char* v2 =
        "CREATE TABLE eval_cache (key TEXT PRIMARY KEY, host_fingerprint TEXT NOT NULL, "
        "result_json TEXT NOT NULL, created_at INTEGER NOT NULL);"
        "CREATE TABLE model_checks (kernel_key TEXT NOT NULL, generation TEXT NOT NULL, "
        "predicted_s REAL NOT NULL, measured_s REAL NOT NULL, created_at INTEGER NOT NULL);"
        "INSERT INTO eval_cache VALUES ('old-key', 'cpu', '{\"ok\": true}', 1);"
        "PRAGMA user_version = 2;";
    ASSERT_EQ(sqlite3_exec(raw, v2, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  Store store(db());
  EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
  EXPECT_GE(Store::latest_schema_version(), 4);
  EXPECT_EQ(*store.cached_evaluation("old-key"), "{\"ok\": true}");
  EXPECT_FALSE(store.search("megacore parallel", 3).empty());
  Lesson l;
  l.kernel_class = "matmul";
  l.strategy = "bigger tiles";
  l.effect = 1.5;
  EXPECT_GT(store.record_lesson(l), 0);
}

}  // namespace
}  // namespace mk::knowledge
