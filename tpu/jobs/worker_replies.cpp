#include "tpu/jobs/worker_replies.h"

#include "tpu/host/json_fields.h"

namespace mk::tpu {

using nlohmann::json;

namespace {

// A flag the worker sets with a JSON true; anything else is unset.
bool flag_at(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_boolean() && v.get<bool>();
}

std::optional<int64_t> integer_at(const json& j, const char* key) {
  if (!field(j, key).is_number()) return std::nullopt;
  return integer_or(j, key);
}

// The value at `key` when it is an object, else null.
json object_or_null(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_object() ? v : json();
}

// The value at `key` when it is a list, else an empty list.
json list_at(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_array() ? v : json::array();
}

LoweredCall lowered_call(const json& call) {
  LoweredCall out;
  out.kernel = text_at(call, "kernel", "?");
  out.line = static_cast<int>(integer_or(field(call, "location"), "line"));
  const json& grid = field(call, "grid");
  out.grid = grid.is_null() ? "[]" : grid.dump();
  const json& vmem = field(call, "vmem_bytes_per_step");
  if (vmem.is_number()) out.vmem_bytes_per_step = integer_or(call, "vmem_bytes_per_step");
  out.vmem_bytes_text = vmem.dump();
  for (const json& op : list_at(call, "operands")) {
    out.operands.push_back({text_at(op, "role"), field(op, "block_shape").dump(),
                            field(op, "array_shape").dump(), text_at(op, "dtype")});
  }
  out.facts = call;
  return out;
}

}  // namespace

std::optional<TimedRuns> read_timed_runs(const json& timing, const char* side) {
  const json& s = field(timing, side);
  if (!s.is_object()) return std::nullopt;
  TimedRuns out;
  out.median_s = number_at(s, "median_s");
  out.p10_s = number_at(s, "p10_s");
  out.p90_s = number_at(s, "p90_s");
  out.runs = integer_at(s, "runs");
  out.device_median_s = number_at(field(s, "device"), "median_s");
  return out;
}

ReplyFault read_reply_fault(const json& fault) {
  ReplyFault out;
  if (!fault.is_object()) return out;
  out.kind = text_at(fault, "kind");
  out.message = text_at(fault, "message");
  out.locations_as_written = list_at(fault, "locations");
  for (const json& loc : out.locations_as_written) {
    out.locations.push_back({static_cast<int>(integer_or(loc, "line")),
                             static_cast<int>(integer_or(loc, "column")), text_at(loc, "message")});
  }
  out.compiled_by = field(fault, "compiled_by").is_string();
  out.report = object_or_null(fault, "report");
  out.as_written = fault;
  return out;
}

EvaluateReply read_evaluate_reply(const json& body) {
  EvaluateReply out;
  out.ok = flag_at(body, "ok");
  out.error = read_reply_fault(field(body, "error"));
  out.correct = flag_at(body, "correct");
  out.failure = read_reply_fault(field(body, "failure"));
  out.time_kind = text_at(body, "time_kind");
  out.timing = field(body, "timing");
  out.timing_kind = text_at(out.timing, "time_kind");
  out.candidate = read_timed_runs(out.timing, "candidate");
  out.reference = read_timed_runs(out.timing, "reference");
  out.speedup = number_at(body, "speedup");
  out.device_kind = text_at(body, "device_kind");
  out.run_mode = field(body, "run_mode");
  out.platform = text_at(out.run_mode, "platform");
  out.run_mode_note = text_at(out.run_mode, "note");
  out.seeds_json = field(body, "seeds");
  for (const json& seed : list_at(body, "seeds")) out.seeds.push_back(seed.dump());
  out.judged = body.is_object() && body.contains("judge");
  out.pallas_calls = list_at(body, "pallas_calls");
  out.instance = field(body, "instance");
  out.extra_shapes = field(body, "extra_shapes");
  return out;
}

LowerReply read_lower_reply(const json& body) {
  LowerReply out;
  out.ok = flag_at(body, "ok");
  out.error = read_reply_fault(field(body, "error"));
  out.lowered_for = text_at(body, "lowered_for");
  out.num_pallas_calls = static_cast<int>(integer_or(body, "num_pallas_calls"));
  out.lists_calls = field(body, "pallas_calls").is_array();
  out.pallas_calls = list_at(body, "pallas_calls");
  for (const json& call : out.pallas_calls) out.calls.push_back(lowered_call(call));
  out.cost = field(body, "cost");
  out.work = field(body, "work");
  const json& outside = field(field(out.work, "candidate"), "outside");
  out.outside_flops = number_or(outside, "flops");
  out.outside_bytes = number_or(outside, "bytes");
  out.task_work = object_or_null(out.work, "reference");
  out.tpu_compile = object_or_null(body, "tpu_compile");
  const json& compiled = field(out.tpu_compile, "candidate");
  out.compile_status = text_at(compiled, "status");
  out.compiled_predicted_s = number_at(compiled, "predicted_s");
  return out;
}

ProfileReply read_profile_reply(const json& body) {
  ProfileReply out;
  out.ok = flag_at(body, "ok");
  out.error = read_reply_fault(field(body, "error"));
  const json& summary = field(body, "summary");
  out.measured = text_at(summary, "measured");
  out.pallas_share = number_or(summary, "pallas_share");
  out.pallas_time_us = number_or(summary, "pallas_time_us");
  return out;
}

}  // namespace mk::tpu
