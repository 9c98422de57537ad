// The embedded TPU generations table (knowledge/data/tpu_generations.json).
#include "knowledge/tpu_generations.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace mk::knowledge {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

TEST(TpuGenerations, TableLoads) {
  const auto& table = tpu_generations();
  ASSERT_GE(table.size(), 5u);
  std::set<std::string> names;
  for (const TpuGeneration& g : table) {
    EXPECT_FALSE(g.name.empty());
    EXPECT_TRUE(names.insert(g.name).second) << "duplicate generation " << g.name;
  }
  for (const char* expected : {"v4", "v5e", "v5p", "v6e", "v7"})
    EXPECT_TRUE(names.count(expected)) << expected;
  // The same vector every time (loaded once).
  EXPECT_EQ(&tpu_generations(), &table);
}

TEST(TpuGenerations, V5eFigures) {
  const TpuGeneration* g = find_tpu_generation("v5e");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->name, "v5e");
  EXPECT_EQ(g->vmem_bytes, 128 * kMiB);
  EXPECT_EQ(g->default_scoped_vmem_bytes, 16 * kMiB);
  EXPECT_EQ(g->scoped_vmem_limit(), 16 * kMiB);
  ASSERT_TRUE(g->hbm_bytes);
  EXPECT_GT(*g->hbm_bytes, *g->vmem_bytes);
  EXPECT_GT(g->mxu_rows, 0);
  EXPECT_GE(g->tensorcores_per_chip, 1);
}

TEST(TpuGenerations, ScopedLimitFallsBackToPhysicalVmem) {
  const TpuGeneration* v4 = find_tpu_generation("v4");
  ASSERT_NE(v4, nullptr);
  ASSERT_FALSE(v4->default_scoped_vmem_bytes.has_value());  // not documented for v4
  EXPECT_EQ(v4->scoped_vmem_limit(), v4->vmem_bytes);
  TpuGeneration synthetic;
  EXPECT_FALSE(synthetic.scoped_vmem_limit().has_value());
}

TEST(TpuGenerations, LookupByNameOrAliasIsCaseInsensitive) {
  const TpuGeneration* v5e = find_tpu_generation("v5e");
  ASSERT_NE(v5e, nullptr);
  EXPECT_EQ(find_tpu_generation("V5E"), v5e);
  EXPECT_EQ(find_tpu_generation("TPU v5 lite"), v5e);
  EXPECT_EQ(find_tpu_generation("tpu V5 LITE"), v5e);
  const TpuGeneration* v6e = find_tpu_generation("trillium");
  ASSERT_NE(v6e, nullptr);
  EXPECT_EQ(v6e->name, "v6e");
  const TpuGeneration* v7 = find_tpu_generation("IRONWOOD");
  ASSERT_NE(v7, nullptr);
  EXPECT_EQ(v7->name, "v7");
  EXPECT_EQ(find_tpu_generation("v99"), nullptr);
  EXPECT_EQ(find_tpu_generation(""), nullptr);
  EXPECT_EQ(find_tpu_generation("v5"), find_tpu_generation("v5p"));  // "v5" is v5p, not v5e
}

TEST(TpuGenerations, EveryGenerationCitesItsVmemSource) {
  for (const TpuGeneration& g : tpu_generations()) {
    ASSERT_TRUE(g.vmem_bytes.has_value()) << g.name;
    EXPECT_GT(*g.vmem_bytes, 0) << g.name;
    auto it = g.source_urls.find("vmem_bytes");
    ASSERT_NE(it, g.source_urls.end()) << g.name << " has no source for vmem_bytes";
    EXPECT_EQ(it->second.rfind("https://", 0), 0u) << g.name << ": " << it->second;
    if (g.default_scoped_vmem_bytes) {
      EXPECT_LE(*g.default_scoped_vmem_bytes, *g.vmem_bytes) << g.name;
      EXPECT_TRUE(g.source_urls.count("default_scoped_vmem_bytes")) << g.name;
    }
  }
}

TEST(TpuGenerations, KnownNamesListsEveryGeneration) {
  const std::string names = known_generation_names();
  for (const TpuGeneration& g : tpu_generations())
    EXPECT_NE(names.find(g.name), std::string::npos) << g.name;
  EXPECT_EQ(names.rfind("v4, ", 0), 0u) << names;
}

}  // namespace
}  // namespace mk::knowledge
