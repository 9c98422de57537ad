#include "service/budget_defaults.h"

namespace mk::service {

agents::Budget default_budget(BudgetFront front, const std::string& mode) {
  agents::Budget b;
  b.iterations = 3;
  switch (front) {
    case BudgetFront::Optimize:
      if (mode == "auto") {
        b.iterations = 8;
        b.patience = 3;
      }
      break;
    case BudgetFront::Bench:
      b.patience = 2;
      break;
    case BudgetFront::Editor:
      if (mode == "auto") {
        b.iterations = 6;
        b.patience = 3;
      }
      break;
  }
  return b;
}

}  // namespace mk::service
