#include "agents/orchestration/hitl_suggestion.h"

#include <vector>

#include "agents/orchestration/number_text.h"

namespace mk::agents {

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

}  // namespace

std::optional<HitlSuggestion> suggest_next_phase(const Diagnosis& d) {
  const std::vector<std::string> families = answering_strategies(d);
  if (families.empty()) return std::nullopt;
  const std::string what = d.summary.empty() ? d.bound + "-bound" : d.summary;
  if (d.bound != "VMEM" && d.roofline_fraction && *d.roofline_fraction >= kNearRooflineFraction)
    return HitlSuggestion{std::nullopt,
                          "at " + percent_text(*d.roofline_fraction) +
                              " of the roofline the task's minimum work leaves little to "
                              "win; Approve accepts the kernel"};
  const int direction = preferred_block_direction(d);
  const std::string& first = families.front();
  if (first == "autotune" || (first == "block_sizes" && direction != 0)) {
    std::string how;
    if (!d.refetches.empty())
      how = "larger blocks fetch " + d.refetches.front().operand + " fewer times";
    else if (d.bound == "grid overhead")
      how = "fewer, larger grid steps pay less per-step overhead";
    else
      how = direction < 0 ? "smaller blocks" : "larger blocks";
    return HitlSuggestion{HitlPhase::autotune, what + "; " + how + ", and autotune tries " +
                                                   (direction < 0 ? "smaller" : "larger") +
                                                   " blocks first"};
  }
  return HitlSuggestion{HitlPhase::plan,
                        what + "; a new plan ticks the " + joined(families) +
                            " rewrites that answer it, and implement applies them"};
}

}  // namespace mk::agents
