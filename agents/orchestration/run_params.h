// How a run searches (RunRecord::params): the search parameters, where it starts, the extra
// fields of every evaluate request, the state a resumed run continues from, and the reference's
// (XLA) score. The store keeps the JSON object it always had in runs.params_json ("search",
// "start", "evaluate", "state", "xla"), converted once at the storage boundary (run_store.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/orchestration/search_params.h"

namespace mk::agents {

// Where a search stands between sessions ("state"): a resumed run goes on from here.
struct SearchState {
  int round = 0;                // rounds of expansion finished
  int rounds_without_gain = 0;  // finished rounds since the best last improved (patience)
  double elapsed_s = 0;         // wall time of the sessions so far (the seconds budget)
  int tuned_round = -1;         // the round whose autotune phase has run (-1: none yet)
  bool operator==(const SearchState&) const = default;
};

// The task's reference as XLA runs it, scored once per run from a kernel ("xla"): what "vs XLA"
// and the share of the roofline are computed from.
struct XlaBaseline {
  std::string time_kind;             // the kind of score_s: "device" | "predicted" | ""
  std::optional<double> score_s;     // its time (absent when it could not be scored)
  std::optional<double> roofline_s;  // the task's minimum work at the target's roofline
  std::string error;                 // why it could not be scored ("" when it was)
  bool operator==(const XlaBaseline&) const = default;
};

// The extra input shapes a run asked for and, once proposed, the set it checks every candidate
// at ("extra_shapes"; docs/optimize.md "Extra shapes").
struct ExtraShapesChoice {
  bool rules = true;   // ragged / single-block shapes from the kernel's blocks (no LLM)
  int tester = 0;      // at most this many shapes from the Tester (needs an LLM; 0 = not asked)
  nlohmann::json set;  // the proposed set (ExtraShapes' JSON, extra_shapes.h); null until then
  bool operator==(const ExtraShapesChoice&) const = default;
};

struct RunParams {
  SearchParams search;  // strategy and shape ("search")
  // The root is the task's reference as XLA runs it, not a kernel ("start": "reference").
  bool from_reference = false;
  // Extra fields of every evaluate request, passed to the worker as they are ({"shrink": 8}):
  // kept with the run so a resume evaluates the same way ("evaluate"; {} = none).
  nlohmann::json evaluate = nlohmann::json::object();
  SearchState state;                              // "state"
  std::optional<XlaBaseline> xla;                 // "xla"; absent until the reference was scored
  std::optional<ExtraShapesChoice> extra_shapes;  // "extra_shapes"; absent: none asked for
  // The kernel file the run wrote (a run from a reference hands back its best correct kernel)
  // and the node it is ("kernel_written": {"path", "node"}); "" while none was written.
  std::string kernel_written;
  std::optional<int64_t> kernel_written_node;

  nlohmann::json to_json() const;
  // Missing parts keep their defaults; anything but an object is all defaults.
  static RunParams from_json(const nlohmann::json& j);
};

}  // namespace mk::agents
