// The same-kind rule every "vs XLA" and node speedup goes through
// (agents/orchestration/score_kind).
#include "agents/orchestration/score_kind.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

TEST(SameKindSpeedup, ComparesTwoScoresOfOneRankableKind) {
  EXPECT_DOUBLE_EQ(*same_kind_speedup(6e-3, "compiled", 4e-3, "compiled"), 1.5);
  EXPECT_DOUBLE_EQ(*same_kind_speedup(2e-3, "device", 4e-3, "device"), 0.5);
  EXPECT_DOUBLE_EQ(*same_kind_speedup(3e-3, "predicted", 1e-3, "predicted"), 3.0);
}

TEST(SameKindSpeedup, NeverTheCompilerAgainstARooflineOrInterpretTime) {
  // XLA's compiled program against a kernel the model predicted, and the other way round.
  EXPECT_FALSE(same_kind_speedup(6e-3, "compiled", 4e-3, "predicted"));
  EXPECT_FALSE(same_kind_speedup(6e-3, "predicted", 4e-3, "compiled"));
  EXPECT_FALSE(same_kind_speedup(6e-3, "compiled", 4e-3, "device"));
  EXPECT_FALSE(same_kind_speedup(6e-3, "compiled", 4e-3, "interpret"));
  // Interpret time ranks nothing, not even against itself; nor does an unnamed kind.
  EXPECT_FALSE(same_kind_speedup(6e-3, "interpret", 4e-3, "interpret"));
  EXPECT_FALSE(same_kind_speedup(6e-3, "", 4e-3, ""));
}

TEST(SameKindSpeedup, NeedsTwoPositiveScores) {
  EXPECT_FALSE(same_kind_speedup(std::nullopt, "compiled", 4e-3, "compiled"));
  EXPECT_FALSE(same_kind_speedup(6e-3, "compiled", std::nullopt, "compiled"));
  EXPECT_FALSE(same_kind_speedup(6e-3, "compiled", 0.0, "compiled"));
  EXPECT_FALSE(same_kind_speedup(-1.0, "compiled", 4e-3, "compiled"));
}

}  // namespace
}  // namespace mk::agents
