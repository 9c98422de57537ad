#include "agents/orchestration/number_text.h"

#include <cstdio>

namespace mk::agents {

std::string percent_text(double fraction, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, fraction * 100);
  return buf;
}

std::string times_text(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3gx", ratio);
  return buf;
}

}  // namespace mk::agents
