// What an evaluation established about one node (NodeRecord::metrics): the worker's verdict, its
// timing and spread, the time model's predictions, the host, the search's diagnosis. Typed fields
// for everything code reads or decides on; the rest of the worker's answer (lowering facts,
// seeds, run mode, ...) stays one JSON object that only the report and the CLI's JSON print.
//
// The store keeps the JSON object it always had in nodes.metrics_json (same keys, same places):
// from_json takes each typed field out of that object and leaves the rest in `facts`; to_json
// puts them back. Values that say nothing (null, "", [], {}) stay in `facts` where they were, so a
// stored object reads back and writes out as it came.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/orchestration/diagnosis.h"

namespace mk::agents {

// One side of the worker's timing answer ("timing"."candidate" / "timing"."reference").
struct TimedSide {
  std::optional<double> median_s;         // wall clock around blocked calls: median over the runs
  std::optional<double> p10_s, p90_s;     // its spread: 10th and 90th percentile
  std::optional<int64_t> runs;            // timed calls
  std::optional<double> device_median_s;  // the profiler trace's device time ("device"."median_s")
  bool operator==(const TimedSide&) const = default;
};

// The time model's prediction for one pallas_call (tpu/jobs/predictions.h, "predictions"[i]).
struct CallPrediction {
  std::string kernel;                 // the pallas_call's kernel
  std::string unavailable;            // why there is no prediction ("" when there is one)
  std::string label;                  // "predicted (model, v5e)"
  std::optional<double> predicted_s;  // one call's predicted time
  std::optional<double> compute_s, memory_s, overhead_s;  // its parts: FLOPs, HBM, grid steps
  std::string bound;                                      // the largest part's name
  std::optional<double> arithmetic_intensity;             // FLOPs per HBM byte
  std::optional<double> ridge_intensity;                  // the target's ridge point
  std::vector<std::string> assumptions;                   // what the model had to assume
  bool operator==(const CallPrediction&) const = default;
};

struct NodeMetrics {
  std::optional<bool> correct;  // the worker's verdict against the task's reference
  // What the worker timed: "device" | "interpret" | "" (the node's own score kind is
  // NodeRecord::time_kind: "device" | "compiled" (the TPU compiler's cycles) | "predicted").
  std::string time_kind;
  std::optional<TimedSide> candidate_time;  // the node's code ("timing"."candidate")
  std::optional<TimedSide> reference_time;  // the reference timed beside it ("timing"."reference")
  std::optional<double> speedup_vs_reference;  // reference / candidate, as the worker timed them
  std::vector<CallPrediction> predictions;     // one per pallas_call
  std::string host;                            // the host that evaluated it ("" = cache or none)
  // Where a failed evaluation stopped: "lowering", "execution", "correctness", "host".
  std::string stage;
  // What limits a correct node ("bottleneck"); the search orders the next rewrites by it.
  std::optional<Diagnosis> bottleneck;
  std::string answers;  // the parent's diagnosis this node's change answers ("" = none used)
  // The LLM Profile analyst's reading of this node as a parent ("analysis": its answer or why
  // there is none, as llm_expander's ParentAnalysis writes it); null until one was asked.
  nlohmann::json analysis;
  // The rest of the worker's answer as it came: "pallas_calls" (lowering facts), "seeds",
  // "run_mode", "instance", "task_work", "xla_cost", "prediction", "outside_kernels",
  // "locations", "reference", the untyped parts of "timing".
  nlohmann::json facts = nlohmann::json::object();

  // The share of the task's roofline the node reaches (the diagnosis'; "roofline_fraction").
  std::optional<double> roofline_fraction() const;

  nlohmann::json to_json() const;
  // `j` as a stored object or an evaluation's metrics; anything but an object is empty metrics.
  static NodeMetrics from_json(nlohmann::json j);
  bool operator==(const NodeMetrics&) const;
};

}  // namespace mk::agents
