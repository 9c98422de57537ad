// The phases of an "Optimize step by step" (HITL) session, in the order they run. In memory an
// enum; the store and the editors keep the names they always had ("plan", "implement", ...):
// to_string / hitl_phase_from_string convert where a phase is stored, shown or read back.
//
// An unknown name read from the store is an error naming it (as record_status.h does for
// statuses): only a hand-edited or damaged row holds one, and resuming a session in a guessed
// phase would redo or skip the user's work.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mk::agents {

enum class HitlPhase { plan, implement, validate, test, autotune, profile };

// Every phase in order (plan first, profile last).
const std::vector<HitlPhase>& hitl_phases();
// The 0-based position of the phase in hitl_phases().
size_t hitl_phase_index(HitlPhase phase);

std::string to_string(HitlPhase phase);
// The phase with this name; nullopt for any other text (a client's answer is checked with it).
std::optional<HitlPhase> parse_hitl_phase(std::string_view name);
// The phase a stored name stands for; std::runtime_error naming the text when it is none.
HitlPhase hitl_phase_from_string(std::string_view name);

}  // namespace mk::agents
