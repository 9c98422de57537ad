#include "agents/orchestration/selection.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

NodeRecord node(int64_t id, std::optional<int64_t> parent, int depth, const std::string& status,
                std::optional<double> speedup) {
  NodeRecord n;
  n.run_id = "r";
  n.id = id;
  n.parent = parent;
  n.depth = depth;
  n.status = node_status_from_string(status);
  n.speedup = speedup;
  n.finished_at = status == "pending" ? 0 : 100 + id;
  return n;
}

SearchParams params(const std::string& strategy) {
  SearchParams p;
  p.strategy = strategy;
  p.beam_size = 2;
  p.branches = 2;
  p.max_depth = 3;
  return p;
}

TEST(Selection, OnlyCorrectScoredNodesAreRankable) {
  std::vector<NodeRecord> nodes = {
      node(0, {}, 0, "correct", 1.0), node(1, 0, 1, "incorrect", std::nullopt),
      node(2, 0, 1, "failed", std::nullopt), node(3, 0, 1, "correct", std::nullopt)};
  // An incorrect node with a (bogus) speedup must still never win.
  nodes[1].speedup = 50.0;
  const NodeRecord* best = best_node(nodes);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->id, 0);
}

TEST(Selection, BestBreaksTiesByEarlierNode) {
  std::vector<NodeRecord> nodes = {node(0, {}, 0, "correct", 1.0), node(1, 0, 1, "correct", 2.0),
                                   node(2, 0, 1, "correct", 2.0)};
  EXPECT_EQ(best_node(nodes)->id, 1);
}

TEST(Selection, GreedyExpandsTheBestAndSkipsExhaustedOrTooDeep) {
  std::vector<NodeRecord> nodes = {node(0, {}, 0, "correct", 1.0), node(1, 0, 1, "correct", 1.5),
                                   node(2, 1, 3, "correct", 3.0)};
  // Node 2 is at max depth: the best expandable node is 1.
  EXPECT_EQ(select_parents(nodes, params("greedy"), {}), std::vector<int64_t>{1});
  EXPECT_EQ(select_parents(nodes, params("greedy"), {1}), std::vector<int64_t>{0});
  EXPECT_TRUE(select_parents(nodes, params("greedy"), {0, 1}).empty());
}

TEST(Selection, BeamTakesTheTopOfTheDeepestLevelPlusCarriedParents) {
  std::vector<NodeRecord> nodes = {node(0, {}, 0, "correct", 1.0), node(1, 0, 1, "correct", 1.2),
                                   node(2, 0, 1, "correct", 2.0),  node(3, 0, 1, "failed", {}),
                                   node(4, 2, 2, "correct", 1.1),  node(5, 2, 2, "incorrect", {})};
  // Deepest rankable level is 2 (only node 4); keep_factor 0.5 of beam 2 carries one parent from
  // level 1 (node 2, 2.0x), which outranks node 4.
  EXPECT_EQ(select_parents(nodes, params("beam"), {}), (std::vector<int64_t>{2, 4}));
  SearchParams no_carry = params("beam");
  no_carry.keep_factor = 0;
  EXPECT_EQ(select_parents(nodes, no_carry, {}), std::vector<int64_t>{4});
}

TEST(Selection, ParallelFillsTheRootThenKeepsLineagesApart) {
  std::vector<NodeRecord> nodes = {node(0, {}, 0, "correct", 1.0), node(1, 0, 1, "correct", 1.2)};
  // One root child so far, beam 2: the root is expanded again.
  EXPECT_EQ(select_parents(nodes, params("parallel"), {}), std::vector<int64_t>{0});
  nodes.push_back(node(2, 0, 1, "correct", 0.9));
  nodes.push_back(node(3, 1, 2, "correct", 1.8));
  nodes.push_back(node(4, 2, 2, "correct", 1.0));
  // Lineage of node 1 -> its best is 3; lineage of node 2 -> its best is 4 (even though 3 is
  // better overall, each lineage expands its own).
  EXPECT_EQ(select_parents(nodes, params("parallel"), {}), (std::vector<int64_t>{3, 4}));
}

TEST(Selection, UcbPrefersUnvisitedPromisingNodes) {
  std::vector<NodeRecord> nodes = {node(0, {}, 0, "correct", 1.0), node(1, 0, 1, "correct", 2.0),
                                   node(2, 0, 1, "correct", 1.9)};
  // Node 1's subtree is heavily visited with poor children; node 2 is fresh and nearly as good.
  for (int64_t id = 3; id < 9; ++id) nodes.push_back(node(id, 1, 2, "failed", {}));
  SearchParams p = params("ucb");
  p.max_depth = 4;
  EXPECT_EQ(select_parents(nodes, p, {}), std::vector<int64_t>{2});
  // With no exploration the plain mean decides: node 2 (1.9/2.0) beats node 1's diluted mean.
  p.ucb_exploration = 0;
  EXPECT_EQ(select_parents(nodes, p, {}), std::vector<int64_t>{2});
  // Exhausting node 2 moves the choice elsewhere.
  EXPECT_NE(select_parents(nodes, p, {2}), std::vector<int64_t>{2});
}

}  // namespace
}  // namespace mk::agents
