// The kinds a kernel's or XLA's time is scored in, and the rule that a speedup compares only two
// scores of one kind: measured with measured ("device"), the TPU compiler's static cycles with
// the TPU compiler's ("compiled"), the analytic model with the model ("predicted"). The TPU
// compiler's XLA program against a roofline, or anything against interpret time, is no speedup.
#pragma once

#include <optional>
#include <string>

namespace mk::agents {

// Whether `kind` is a score a search may rank by: "device", "compiled" or "predicted" (never
// "interpret", never "").
bool rankable_score_kind(const std::string& kind);

// baseline_s / score_s when both are positive scores of the same rankable kind; else nullopt.
std::optional<double> same_kind_speedup(std::optional<double> baseline_s,
                                        const std::string& baseline_kind,
                                        std::optional<double> score_s,
                                        const std::string& score_kind);

}  // namespace mk::agents
