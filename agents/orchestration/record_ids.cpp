#include "agents/orchestration/record_ids.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

namespace mk::agents {

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string timestamped_id(char prefix) {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", rd() & 0xffffu);
  return std::string(1, prefix) + stamp + "-" + suffix;
}

}  // namespace mk::agents
