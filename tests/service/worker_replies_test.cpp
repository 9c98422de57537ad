// The worker's evaluate, lower and profile replies read into their structs (tpu/jobs/
// worker_replies): a well-formed reply reads whole; a missing field and a field of another JSON
// type both read as absent, and no read throws, whatever the body is.
#include "tpu/jobs/worker_replies.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mk::tpu {
namespace {

using nlohmann::json;

TEST(WorkerReplies, AWellFormedEvaluateReplyReadsWhole) {
  const json body = json::parse(R"json({
    "ok": true, "correct": true, "seeds": [11, 12], "time_kind": "device",
    "device_kind": "TPU v5 lite", "speedup": 1.5, "judge": {"sandbox": "namespaces"},
    "run_mode": {"platform": "tpu", "note": "on the device"}, "instance": {"kind": "full"},
    "extra_shapes": {"passed": 2, "failed": 0},
    "pallas_calls": [{"kernel": "k"}],
    "timing": {"time_kind": "device",
               "candidate": {"median_s": 0.002, "p10_s": 0.0019, "p90_s": 0.0021, "runs": 20,
                             "device": {"median_s": 0.0015}},
               "reference": {"median_s": 0.003}}})json");
  const EvaluateReply r = read_evaluate_reply(body);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(r.time_kind, "device");
  EXPECT_EQ(r.timing_kind, "device");
  ASSERT_TRUE(r.candidate);
  EXPECT_EQ(r.candidate->median_s, 0.002);
  EXPECT_EQ(r.candidate->p10_s, 0.0019);
  EXPECT_EQ(r.candidate->p90_s, 0.0021);
  EXPECT_EQ(r.candidate->runs, 20);
  EXPECT_EQ(r.candidate->device_median_s, 0.0015);
  ASSERT_TRUE(r.reference);
  EXPECT_EQ(r.reference->median_s, 0.003);
  EXPECT_FALSE(r.reference->runs);
  EXPECT_EQ(r.speedup, 1.5);
  EXPECT_EQ(r.device_kind, "TPU v5 lite");
  EXPECT_EQ(r.platform, "tpu");
  EXPECT_EQ(r.run_mode_note, "on the device");
  EXPECT_EQ(r.seeds, (std::vector<std::string>{"11", "12"}));
  EXPECT_TRUE(r.judged);
  EXPECT_EQ(r.pallas_calls.size(), 1u);
  // The parts records keep whole come as written.
  EXPECT_EQ(r.timing, body["timing"]);
  EXPECT_EQ(r.seeds_json, body["seeds"]);
  EXPECT_EQ(r.instance, body["instance"]);
  EXPECT_EQ(r.extra_shapes, body["extra_shapes"]);
  EXPECT_EQ(r.failure.as_written, json());
}

TEST(WorkerReplies, AWrongResultKeepsItsFailureAndReport) {
  const json body = json::parse(R"json({
    "ok": true, "correct": false, "seeds": [4], "timing": null, "speedup": null,
    "failure": {"kind": "mismatch", "message": "output 0 differs",
                "report": {"text": "max abs err 3.0"},
                "locations": [{"line": 21, "column": 1, "message": "here"}]}})json");
  const EvaluateReply r = read_evaluate_reply(body);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.correct);
  EXPECT_EQ(r.failure.kind, "mismatch");
  EXPECT_EQ(r.failure.message, "output 0 differs");
  EXPECT_EQ(r.failure.report, body["failure"]["report"]);
  ASSERT_EQ(r.failure.locations.size(), 1u);
  EXPECT_EQ(r.failure.locations[0].line, 21);
  EXPECT_EQ(r.failure.locations[0].column, 1);
  EXPECT_EQ(r.failure.locations[0].message, "here");
  EXPECT_EQ(r.failure.locations_as_written, body["failure"]["locations"]);
  EXPECT_FALSE(r.candidate);  // "timing": null: not timed
  EXPECT_FALSE(r.speedup);
  EXPECT_TRUE(r.timing.is_null());
}

TEST(WorkerReplies, MissingFieldsReadAsAbsent) {
  for (const json& body : {json::object(), json(), json("ok"), json::array({1, 2})}) {
    const EvaluateReply r = read_evaluate_reply(body);
    EXPECT_FALSE(r.ok) << body;
    EXPECT_FALSE(r.correct) << body;
    EXPECT_TRUE(r.time_kind.empty()) << body;
    EXPECT_FALSE(r.candidate) << body;
    EXPECT_FALSE(r.reference) << body;
    EXPECT_FALSE(r.speedup) << body;
    EXPECT_TRUE(r.seeds.empty()) << body;
    EXPECT_FALSE(r.judged) << body;
    EXPECT_TRUE(r.pallas_calls.is_array() && r.pallas_calls.empty()) << body;
    EXPECT_TRUE(r.timing.is_null()) << body;
    EXPECT_TRUE(r.error.kind.empty() && r.error.message.empty()) << body;
    EXPECT_TRUE(r.error.locations.empty()) << body;
    EXPECT_TRUE(r.failure.as_written.is_null()) << body;

    const LowerReply l = read_lower_reply(body);
    EXPECT_FALSE(l.ok) << body;
    EXPECT_FALSE(l.lists_calls) << body;
    EXPECT_TRUE(l.calls.empty()) << body;
    EXPECT_EQ(l.num_pallas_calls, 0) << body;
    EXPECT_TRUE(l.cost.is_null()) << body;
    EXPECT_EQ(l.outside_flops, 0) << body;
    EXPECT_TRUE(l.tpu_compile.is_null()) << body;
    EXPECT_FALSE(l.compiled_predicted_s) << body;

    const ProfileReply p = read_profile_reply(body);
    EXPECT_FALSE(p.ok) << body;
    EXPECT_TRUE(p.measured.empty()) << body;
    EXPECT_EQ(p.pallas_share, 0) << body;
  }
}

TEST(WorkerReplies, FieldsOfAnotherTypeReadAsAbsent) {
  const json body = json::parse(R"json({
    "ok": "true", "correct": 1, "time_kind": 3, "speedup": "2x", "seeds": "1,2",
    "device_kind": ["tpu"], "run_mode": "tpu", "failure": "boom", "pallas_calls": {"k": 1},
    "timing": {"time_kind": null,
               "candidate": {"median_s": "fast", "p10_s": 0.1, "runs": 2.9,
                             "device": {"median_s": [1]}},
               "reference": [0.003]},
    "error": {"kind": 5, "message": {"text": "x"}, "compiled_by": 1,
              "locations": [{"line": "9", "column": 2}, 7]}})json");
  const EvaluateReply r = read_evaluate_reply(body);
  EXPECT_FALSE(r.ok);       // only a JSON true is ok
  EXPECT_FALSE(r.correct);  // only a JSON true is correct
  EXPECT_TRUE(r.time_kind.empty());
  EXPECT_TRUE(r.timing_kind.empty());
  ASSERT_TRUE(r.candidate);  // an object: read, each field on its own
  EXPECT_FALSE(r.candidate->median_s);
  EXPECT_EQ(r.candidate->p10_s, 0.1);
  EXPECT_EQ(r.candidate->runs, 2);  // a float count truncates
  EXPECT_FALSE(r.candidate->device_median_s);
  EXPECT_FALSE(r.reference);  // not an object
  EXPECT_FALSE(r.speedup);
  EXPECT_TRUE(r.seeds.empty());
  EXPECT_TRUE(r.device_kind.empty());
  EXPECT_TRUE(r.platform.empty());
  EXPECT_TRUE(r.pallas_calls.is_array() && r.pallas_calls.empty());
  EXPECT_TRUE(r.failure.kind.empty());
  EXPECT_TRUE(r.failure.as_written.is_null());  // not an object
  EXPECT_TRUE(r.error.kind.empty());
  EXPECT_TRUE(r.error.message.empty());
  EXPECT_FALSE(r.error.compiled_by);  // a compiler's name is a string
  ASSERT_EQ(r.error.locations.size(), 2u);
  EXPECT_EQ(r.error.locations[0].line, 0);  // "9" is no line number
  EXPECT_EQ(r.error.locations[0].column, 2);
  EXPECT_EQ(r.error.locations[1].line, 0);

  const LowerReply l = read_lower_reply(json::parse(R"json({
    "ok": 1, "lowered_for": 7, "num_pallas_calls": "2", "pallas_calls": {"k": 1},
    "tpu_compile": "compiled", "work": {"candidate": {"outside": {"flops": "many", "bytes": 64}},
                                        "reference": [1]}})json"));
  EXPECT_FALSE(l.ok);
  EXPECT_TRUE(l.lowered_for.empty());
  EXPECT_EQ(l.num_pallas_calls, 0);
  EXPECT_FALSE(l.lists_calls);
  EXPECT_TRUE(l.calls.empty());
  EXPECT_TRUE(l.tpu_compile.is_null());
  EXPECT_TRUE(l.compile_status.empty());
  EXPECT_EQ(l.outside_flops, 0);
  EXPECT_EQ(l.outside_bytes, 64);
  EXPECT_TRUE(l.task_work.is_null());

  const ProfileReply p = read_profile_reply(
      json::parse(R"json({"ok": true, "summary": {"measured": 1, "pallas_share": "half"}})json"));
  EXPECT_TRUE(p.ok);
  EXPECT_TRUE(p.measured.empty());
  EXPECT_EQ(p.pallas_share, 0);
}

TEST(WorkerReplies, ALoweringReadsEachCallAndTheCompilersVerdict) {
  const json body = json::parse(R"json({"ok": true, "lowered_for": "tpu", "num_pallas_calls": 2,
    "cost": {"flops": 1024},
    "work": {"candidate": {"outside": {"flops": 10, "bytes": 20}}, "reference": {"flops": 5}},
    "tpu_compile": {"candidate": {"status": "compiled", "predicted_s": 0.004}},
    "pallas_calls": [{"kernel": "matmul_kernel", "location": {"line": 14}, "grid": [4, 2],
                      "vmem_bytes_per_step": 196608,
                      "operands": [{"role": "input", "block_shape": [128, 256],
                                    "array_shape": [512, 256], "dtype": "float32"}]},
                     {"grid": null, "vmem_bytes_per_step": null, "operands": "none"}]})json");
  const LowerReply l = read_lower_reply(body);
  EXPECT_TRUE(l.ok);
  EXPECT_EQ(l.lowered_for, "tpu");
  EXPECT_EQ(l.num_pallas_calls, 2);
  EXPECT_TRUE(l.lists_calls);
  EXPECT_EQ(l.pallas_calls, body["pallas_calls"]);
  ASSERT_EQ(l.calls.size(), 2u);
  const LoweredCall& a = l.calls[0];
  EXPECT_EQ(a.kernel, "matmul_kernel");
  EXPECT_EQ(a.line, 14);
  EXPECT_EQ(a.grid, "[4,2]");
  EXPECT_EQ(a.vmem_bytes_per_step, 196608);
  ASSERT_EQ(a.operands.size(), 1u);
  EXPECT_EQ(a.operands[0].role, "input");
  EXPECT_EQ(a.operands[0].block_shape, "[128,256]");
  EXPECT_EQ(a.operands[0].array_shape, "[512,256]");
  EXPECT_EQ(a.operands[0].dtype, "float32");
  EXPECT_EQ(a.facts, body["pallas_calls"][0]);
  const LoweredCall& b = l.calls[1];  // a call that says little
  EXPECT_EQ(b.kernel, "?");
  EXPECT_EQ(b.line, 0);
  EXPECT_EQ(b.grid, "[]");
  EXPECT_FALSE(b.vmem_bytes_per_step);
  EXPECT_EQ(b.vmem_bytes_text, "null");
  EXPECT_TRUE(b.operands.empty());
  EXPECT_EQ(l.cost, body["cost"]);
  EXPECT_EQ(l.outside_flops, 10);
  EXPECT_EQ(l.outside_bytes, 20);
  EXPECT_EQ(l.task_work, body["work"]["reference"]);
  EXPECT_EQ(l.compile_status, "compiled");
  EXPECT_EQ(l.compiled_predicted_s, 0.004);
}

TEST(WorkerReplies, ACompilersRefusalSaysSo) {
  const LowerReply l = read_lower_reply(json::parse(R"json({"ok": false, "pallas_calls": [],
    "error": {"kind": "compile", "message": "VMEM exceeded", "compiled_by": "libtpu",
              "locations": [{"line": 9}]}})json"));
  EXPECT_FALSE(l.ok);
  EXPECT_TRUE(l.lists_calls);  // an empty list is still a list
  EXPECT_EQ(l.error.kind, "compile");
  EXPECT_EQ(l.error.message, "VMEM exceeded");
  EXPECT_TRUE(l.error.compiled_by);
  ASSERT_EQ(l.error.locations.size(), 1u);
  EXPECT_EQ(l.error.locations[0].line, 9);
}

}  // namespace
}  // namespace mk::tpu
