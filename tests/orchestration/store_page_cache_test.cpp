// Every store connection keeps a bounded page cache: the language server holds its connections
// for the whole session while the store file grows, so SQLite's default (2 MiB per connection,
// filled by the check on open and by use) made its memory grow with the store.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "agents/orchestration/run_store.h"
#include "knowledge/store.h"
#include "knowledge/store_file_check.h"

namespace mk::agents {
namespace {

constexpr int kEntries = 600;
constexpr size_t kEntryBytes = 6000;  // 600 x 6 KB: a store of about 4 MB per table

std::filesystem::path fresh_store(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("mk-pagecache-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir / "store.sqlite";
}

// Distinct, incompressible-looking text so every entry takes its own pages.
std::string filler(int i) {
  std::string s;
  s.reserve(kEntryBytes);
  uint32_t x = 2166136261u ^ static_cast<uint32_t>(i);
  while (s.size() < kEntryBytes) {
    x = x * 1664525u + 1013904223u;
    s.push_back(static_cast<char>('a' + (x >> 24) % 26));
  }
  return s;
}

std::string fill(const std::filesystem::path& path) {
  knowledge::Store cache(path);
  RunStore runs(path);
  RunRecord run;
  run.mode = "graph";
  run.status = RunStatus::done;
  const std::string run_id = runs.create_run(run);
  for (int i = 0; i < kEntries; ++i) {
    cache.store_evaluation("key-" + std::to_string(i), "cpu", filler(i));
    NodeRecord node;
    node.run_id = run_id;
    if (i > 0) node.parent = 0;
    node.code = filler(-i - 1);
    node.code_hash = "hash-" + std::to_string(i);
    node.status = NodeStatus::correct;
    runs.add_node(node);
  }
  return run_id;
}

TEST(StorePageCache, ReadingAStoreOfMegabytesKeepsEachConnectionsCacheBounded) {
  const auto path = fresh_store("bounded");
  const std::string run_id = fill(path);
  ASSERT_GT(std::filesystem::file_size(path), 2u * kEntries * kEntryBytes);  // all closed

  const int64_t before = sqlite3_memory_used();
  knowledge::Store cache(path);  // its check on open reads every page
  RunStore runs(path);
  const int64_t opened = sqlite3_memory_used() - before;
  for (int i = 0; i < kEntries; ++i)
    ASSERT_EQ(cache.cached_evaluation("key-" + std::to_string(i)), filler(i));
  const auto nodes = runs.nodes(run_id);
  ASSERT_EQ(nodes.size(), static_cast<size_t>(kEntries));
  EXPECT_EQ(nodes.back().code, filler(-kEntries));
  const int64_t used = sqlite3_memory_used() - before;

  // Two connections, each under 1 MiB: its page cache plus schema, statements and lookaside (a
  // few hundred KiB). With SQLite's default cache each would hold over 2 MiB after these reads.
  static_assert(knowledge::kStorePageCacheKiB <= 512);  // the bound below assumes it
  const int64_t bound = 2 * 1024 * 1024;
  EXPECT_GT(used, 0) << "sqlite3_memory_used() counts nothing: memory statistics are off";
  EXPECT_LT(opened, bound) << "after opening: " << opened << " bytes";
  EXPECT_LT(used, bound) << "after reading " << 2 * kEntries << " rows: " << used << " bytes";
}

}  // namespace
}  // namespace mk::agents
