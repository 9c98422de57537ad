#include "agents/orchestration/search_params.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

TEST(Budget, ParsesASubsetOverDefaults) {
  Budget defaults;
  defaults.iterations = 8;
  defaults.patience = 3;
  const Budget b = Budget::parse("evaluations=5,usd=0.5,target=1.5", defaults);
  EXPECT_EQ(b.iterations, 8);
  EXPECT_EQ(b.patience, 3);
  EXPECT_EQ(b.evaluations, 5);
  EXPECT_DOUBLE_EQ(b.usd, 0.5);
  EXPECT_DOUBLE_EQ(b.target_speedup, 1.5);
}

TEST(Budget, RejectsUnknownKeysAndBadNumbers) {
  EXPECT_THROW(Budget::parse("iterations", {}), std::invalid_argument);
  EXPECT_THROW(Budget::parse("iterations=abc", {}), std::invalid_argument);
  EXPECT_THROW(Budget::parse("iterations=-1", {}), std::invalid_argument);
  EXPECT_THROW(Budget::parse("speed=3", {}), std::invalid_argument);
}

TEST(SearchParams, JsonRoundTrip) {
  SearchParams p;
  p.strategy = "ucb";
  p.beam_size = 5;
  p.ucb_exploration = 0.7;
  const SearchParams q = SearchParams::from_json(p.to_json());
  EXPECT_EQ(q.strategy, "ucb");
  EXPECT_EQ(q.beam_size, 5u);
  EXPECT_DOUBLE_EQ(q.ucb_exploration, 0.7);
  Budget b;
  b.tokens = 1000;
  EXPECT_EQ(Budget::from_json(b.to_json()).tokens, 1000);
}

}  // namespace
}  // namespace mk::agents
