// The diagnosis as people read it, written once for every front end: a short label (the editor's
// inlay hint, the HITL question) and the lines of the full summary (the hover, `maxkernel
// profile`, the HITL profile artifact). Plain text; each front end adds its own markup.
#pragma once

#include <string>
#include <vector>

#include "agents/orchestration/diagnosis.h"
#include "agents/orchestration/number_text.h"

namespace mk::agents {

// "HBM-bound · 41% of roofline", "over VMEM · 8% of roofline", "compute-bound"; "bound unknown"
// when the facts are missing.
std::string diagnosis_label(const Diagnosis& d);

// The full summary, one fact a line: the bound with the model's split of the time, each
// re-fetched operand with the grid axes it is re-read along, HBM bytes against the task's
// minimum, VMEM per step against the limit (headroom or excess), the roofline fraction against
// `score_label` (what the fraction compares: "measured (device)", "predicted (model, v5e)"), and
// the device trace's Pallas share. Facts the diagnosis lacks are left out, never guessed.
std::vector<std::string> diagnosis_lines(const Diagnosis& d, const std::string& score_label);

}  // namespace mk::agents
