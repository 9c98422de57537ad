// The budget each front end's search has when none is given, from the one table of defaults:
// the values the CLI's optimize, bench --optimize and the editor have always started from.
#include "service/budget_defaults.h"

#include <gtest/gtest.h>

namespace mk::service {
namespace {

void expect_budget(const agents::Budget& b, int iterations, int patience) {
  EXPECT_EQ(b.iterations, iterations);
  EXPECT_EQ(b.patience, patience);
  // Nothing else is limited unless the user says so.
  EXPECT_EQ(b.evaluations, 0);
  EXPECT_EQ(b.seconds, 0);
  EXPECT_EQ(b.tokens, 0);
  EXPECT_EQ(b.usd, 0);
  EXPECT_EQ(b.target_speedup, 0);
}

TEST(BudgetDefaults, EachFrontStartsFromItsOwnRow) {
  expect_budget(default_budget(BudgetFront::Optimize, "auto"), 8, 3);
  expect_budget(default_budget(BudgetFront::Optimize, "graph"), 3, 0);
  expect_budget(default_budget(BudgetFront::Bench, "auto"), 3, 2);
  expect_budget(default_budget(BudgetFront::Bench, "graph"), 3, 2);
  expect_budget(default_budget(BudgetFront::Editor, "auto"), 6, 3);
  expect_budget(default_budget(BudgetFront::Editor, "graph"), 3, 0);
}

}  // namespace
}  // namespace mk::service
