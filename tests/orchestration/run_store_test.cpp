#include "agents/orchestration/run_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "knowledge/store.h"

namespace mk::agents {
namespace {

std::filesystem::path temp_db(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("mk-runstore-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir / "store.sqlite";
}

RunRecord sample_run() {
  RunRecord r;
  r.mode = "graph";
  r.strategy = "beam";
  r.file = "/tmp/k.py";
  r.target = "v5e";
  r.host = "local";
  r.llm = "none";
  r.status = RunStatus::running;
  return r;
}

TEST(RunStore, RunsAndNodesRoundTripAndSurviveReopening) {
  const auto path = temp_db("roundtrip");
  std::string id;
  {
    RunStore store(path);
    id = store.create_run(sample_run());
    EXPECT_EQ(id.rfind("r", 0), 0u);
    NodeRecord root;
    root.run_id = id;
    root.strategy = "baseline";
    root.code = "print('<script>')\n";
    root.code_hash = "h0";
    root.status = NodeStatus::pending;
    EXPECT_EQ(store.add_node(root), 0);
    NodeRecord child = root;
    child.parent = 0;
    child.depth = 1;
    child.code_hash = "h1";
    EXPECT_EQ(store.add_node(child), 1);
    auto n = *store.node(id, 1);
    n.status = NodeStatus::correct;
    n.speedup = 1.5;
    n.score_s = 2e-6;
    n.finished_at = 42;
    store.update_node(n);
  }
  RunStore reopened(path);
  auto run = reopened.run(id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->strategy, "beam");
  auto nodes = reopened.nodes(id);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].code, "print('<script>')\n");
  EXPECT_FALSE(nodes[0].parent.has_value());
  EXPECT_EQ(*nodes[1].parent, 0);
  EXPECT_DOUBLE_EQ(*nodes[1].speedup, 1.5);
  EXPECT_EQ(reopened.finished_node_with_hash(id, "h1")->id, 1);
  EXPECT_FALSE(reopened.finished_node_with_hash(id, "h0"));  // pending: not finished
  EXPECT_FALSE(reopened.run("nope"));
}

TEST(RunStore, SharesTheKnowledgeStoreDatabaseWithoutTouchingItsSchema) {
  const auto path = temp_db("shared");
  int knowledge_version = 0;
  {
    knowledge::Store knowledge(path);
    knowledge_version = knowledge.schema_version();
  }
  { RunStore runs(path); }
  knowledge::Store again(path);
  EXPECT_EQ(again.schema_version(), knowledge_version);
  RunStore runs_again(path);  // migrating twice is a no-op
  EXPECT_TRUE(runs_again.runs().empty());
}

TEST(RunStore, NewestRunsFirst) {
  RunStore store(temp_db("order"));
  RunRecord a = sample_run();
  a.id = "r1";
  RunRecord b = sample_run();
  b.id = "r2";
  store.create_run(a);
  store.create_run(b);
  auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, "r2");
}

TEST(RunStore, UnwritableLocationIsAClearError) {
  try {
    RunStore store("/proc/maxkernel-cannot-exist/store.sqlite");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/maxkernel-cannot-exist"), std::string::npos);
  }
}

}  // namespace
}  // namespace mk::agents
