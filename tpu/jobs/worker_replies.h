// The worker's lower, evaluate and profile reply bodies as typed structs, read once here for
// everything above (service/kernel_checks, the search's CandidateEvaluator, the bench summary,
// KernelJobs' model check). One rule for every field: a field that is missing or holds another
// JSON type reads as absent (false, 0, "", an empty list, nullopt), never as an error, and a read
// never throws; so an old worker or a garbled reply gives a struct that says "nothing known"
// rather than a half-read one. Parts that records keep whole (the timing object, the run mode,
// each call's facts) are kept as the worker wrote them, beside the typed fields read from them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mk::tpu {

// A line of the user's file the worker names (1-based; 0 when not given).
struct ReplyLocation {
  int line = 0;
  int column = 0;
  std::string message;
};

// A reply's "error" (ok: false) or an evaluation's "failure" (correct: false).
struct ReplyFault {
  std::string kind;
  std::string message;
  std::vector<ReplyLocation> locations;  // deepest frame in the user's file first
  nlohmann::json locations_as_written = nlohmann::json::array();  // the same, as a list
  bool compiled_by = false;   // lower: a compiler refused it ("compiled_by" is a name)
  nlohmann::json report;      // evaluate: the correctness report (an object, or null)
  nlohmann::json as_written;  // the object itself (null when absent or not an object)
};

// One side of "timing" ("candidate" / "reference").
struct TimedRuns {
  std::optional<double> median_s, p10_s, p90_s;
  std::optional<int64_t> runs;
  std::optional<double> device_median_s;  // the profiler trace's ("device"."median_s")
};

struct EvaluateReply {
  bool ok = false;  // "ok": true; anything else (false, absent, "yes") is not ok
  ReplyFault error;
  bool correct = false;  // "correct": true
  ReplyFault failure;
  std::string time_kind;    // top-level "time_kind": "device", "interpret", ...
  std::string timing_kind;  // "timing"."time_kind"
  std::optional<TimedRuns> candidate, reference;  // only when "timing" is an object
  std::optional<double> speedup;                  // the worker's, null unless device-timed
  std::string device_kind;
  std::string platform;            // "run_mode"."platform": "tpu", "gpu", "cpu"
  std::string run_mode_note;       // "run_mode"."note"
  std::vector<std::string> seeds;  // each seed as the worker wrote it (JSON text)
  bool judged = false;             // "judge" is present: the judge ran the candidate
  nlohmann::json pallas_calls = nlohmann::json::array();  // the calls' facts (an array)
  // As written (null when absent), for records that keep them whole.
  nlohmann::json timing, seeds_json, run_mode, instance, extra_shapes;
};

// One operand of a lowered pallas_call; shapes as JSON text ("null" when unknown).
struct LoweredOperand {
  std::string role, block_shape, array_shape, dtype;
};

// One pallas_call as lowering saw it (exact, from the compiler).
struct LoweredCall {
  std::string kernel;  // "?" when not named
  int line = 0;        // 1-based line of the call in the file; 0 when unknown
  std::string grid;    // "[8, 4]" ("[]" when none)
  std::optional<int64_t> vmem_bytes_per_step;
  std::string vmem_bytes_text;  // as written, "null" when unknown
  std::vector<LoweredOperand> operands;
  nlohmann::json facts;  // the call as written, for the time model
};

struct LowerReply {
  bool ok = false;
  ReplyFault error;
  std::string lowered_for;  // "tpu", "native"; "" when not said
  int num_pallas_calls = 0;
  bool lists_calls = false;  // "pallas_calls" is a list (even an empty one, even on an error)
  std::vector<LoweredCall> calls;
  nlohmann::json pallas_calls = nlohmann::json::array();  // as written when a list
  // As written (null when absent): the program's XLA cost and the worker's work counts.
  nlohmann::json cost, work;
  // "work"."candidate"."outside": XLA work the candidate does outside its kernels (0 when none).
  double outside_flops = 0, outside_bytes = 0;
  nlohmann::json task_work;  // "work"."reference": the task's minimum work (an object, or null)
  // "tpu_compile": the TPU compiler's verdict on the lowered program (an object, or null), and
  // its candidate's status and predicted time.
  nlohmann::json tpu_compile;
  std::string compile_status;
  std::optional<double> compiled_predicted_s;
};

struct ProfileReply {
  bool ok = false;
  ReplyFault error;
  std::string measured;  // "device" or "host"
  double pallas_share = 0;
  double pallas_time_us = 0;
};

ReplyFault read_reply_fault(const nlohmann::json& fault);
// One side of a "timing" object (an evaluate or a reference reply's); nullopt unless an object.
std::optional<TimedRuns> read_timed_runs(const nlohmann::json& timing, const char* side);
EvaluateReply read_evaluate_reply(const nlohmann::json& body);
LowerReply read_lower_reply(const nlohmann::json& body);
ProfileReply read_profile_reply(const nlohmann::json& body);

}  // namespace mk::tpu
