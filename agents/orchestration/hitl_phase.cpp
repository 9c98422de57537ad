#include "agents/orchestration/hitl_phase.h"

#include <stdexcept>

namespace mk::agents {

namespace {

// The stored names, indexed by the enum's values (in declaration order).
constexpr std::string_view kPhaseNames[] = {"plan", "implement", "validate",
                                            "test", "autotune",  "profile"};

}  // namespace

const std::vector<HitlPhase>& hitl_phases() {
  static const std::vector<HitlPhase> phases = {HitlPhase::plan,     HitlPhase::implement,
                                                HitlPhase::validate, HitlPhase::test,
                                                HitlPhase::autotune, HitlPhase::profile};
  return phases;
}

size_t hitl_phase_index(HitlPhase phase) {
  return static_cast<size_t>(phase);
}

std::string to_string(HitlPhase phase) {
  return std::string(kPhaseNames[static_cast<size_t>(phase)]);
}

std::optional<HitlPhase> parse_hitl_phase(std::string_view name) {
  for (size_t i = 0; i < std::size(kPhaseNames); ++i)
    if (kPhaseNames[i] == name) return static_cast<HitlPhase>(i);
  return std::nullopt;
}

HitlPhase hitl_phase_from_string(std::string_view name) {
  if (auto phase = parse_hitl_phase(name)) return *phase;
  throw std::runtime_error("unknown HITL phase '" + std::string(name) +
                           "' in the store (hand-edited or damaged?)");
}

}  // namespace mk::agents
