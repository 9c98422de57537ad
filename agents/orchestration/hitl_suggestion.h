// The step the HITL profile phase suggests next, from the profile's diagnosis: the rewrite
// families that answer it (diagnosis.h answering_strategies, the one mapping of bounds to
// families) decide which phase applies them. A pure function: the question offers the suggestion
// first, with its reason.
#pragma once

#include <optional>
#include <string>

#include "agents/orchestration/diagnosis.h"
#include "agents/orchestration/hitl_phase.h"

namespace mk::agents {

// At or above this fraction of the roofline, little is left to win: the suggestion is to accept.
inline constexpr double kNearRooflineFraction = 0.8;

struct HitlSuggestion {
  std::optional<HitlPhase> phase;  // the phase to run next; nullopt = accept (Approve finishes)
  std::string why;                 // one sentence: the diagnosis and what the phase does about it
};

// - unknown bound: no suggestion (the diagnosis never guesses, neither does this);
// - near the roofline (not over VMEM): accept;
// - the answering families start with block moves in a known direction (re-fetched operands and
//   grid overhead: larger; autotune first): autotune, whose trimmed space then keeps that side;
// - otherwise (VMEM over: f32 accumulator, buffering, smaller blocks; compute: dimension
//   semantics; HBM without a re-fetch): plan, a new checklist of those rewrites ticked first,
//   which implement then applies.
std::optional<HitlSuggestion> suggest_next_phase(const Diagnosis& d);

}  // namespace mk::agents
