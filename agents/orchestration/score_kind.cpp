#include "agents/orchestration/score_kind.h"

namespace mk::agents {

bool rankable_score_kind(const std::string& kind) {
  return kind == "device" || kind == "compiled" || kind == "predicted";
}

std::optional<double> same_kind_speedup(std::optional<double> baseline_s,
                                        const std::string& baseline_kind,
                                        std::optional<double> score_s,
                                        const std::string& score_kind) {
  if (!baseline_s || !score_s || *baseline_s <= 0 || *score_s <= 0) return std::nullopt;
  if (baseline_kind != score_kind || !rankable_score_kind(score_kind)) return std::nullopt;
  return *baseline_s / *score_s;
}

}  // namespace mk::agents
