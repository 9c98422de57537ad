#include "agents/orchestration/candidate_evaluator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "agents/tuning/search_space.h"
#include "knowledge/time_model.h"
#include "source/syntax/normalize.h"
#include "tpu/host/json_fields.h"
#include "tpu/jobs/predictions.h"
#include "tpu/jobs/worker_replies.h"

namespace mk::agents {

using nlohmann::json;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Sum of the model's per-call predictions; nullopt when any call lacks the facts (no honest total).
std::optional<double> predicted_total(const json& predictions) {
  if (!predictions.is_array() || predictions.empty()) return std::nullopt;
  double total = 0;
  for (const json& p : predictions) {
    if (!p.contains("predicted_s") || !p["predicted_s"].is_number()) return std::nullopt;
    total += p["predicted_s"].get<double>();
  }
  return total;
}

// The median time of one side of a timing answer (nullopt when not timed): the device time
// from the profiler trace where the worker has one (what JAXBench and MaxKernel measure, out of
// the candidate's reach), else the bound wall clock around blocked calls.
std::optional<double> timed_median(const std::optional<tpu::TimedRuns>& side) {
  if (!side) return std::nullopt;
  return side->device_median_s ? side->device_median_s : side->median_s;
}

// The XLA work the candidate does outside its kernels (the worker's `work.candidate.outside`),
// at the target's roofline: a program is predicted whole, so work moved out of the kernel is
// paid for instead of vanishing from the score. 0 when the worker counted nothing outside.
double outside_work_seconds(const tpu::LowerReply& lowered, const knowledge::TpuGeneration& target,
                            json& metrics) {
  const double flops = lowered.outside_flops;
  const double bytes = lowered.outside_bytes;
  if (flops <= 0 && bytes <= 0) return 0;
  knowledge::KernelCostFacts facts;
  facts.flops = flops;
  facts.hbm_bytes = bytes;
  facts.grid_steps = 0;
  const auto predicted = knowledge::predict_time(facts, target);
  if (!predicted) return 0;
  // No launch overhead of its own: it is XLA work between the kernels.
  const double seconds = std::max(predicted->compute_seconds, predicted->memory_seconds);
  metrics["outside_kernels"] = {{"flops", flops}, {"bytes", bytes}, {"predicted_s", seconds}};
  return seconds;
}

// The model's per-call predictions of a lowering reply (its facts, XLA cost and work counts).
json predictions_of(const tpu::LowerReply& lowered, const knowledge::TpuGeneration& target) {
  return tpu::predict_pallas_calls(lowered.pallas_calls, target, lowered.cost, lowered.work);
}

// The score a kernel is ranked by on a host without a device: its calls' predictions and the XLA
// work outside them (recorded in `metrics`); nullopt when a call lacks the facts.
std::optional<double> model_score(const json& predictions, const tpu::LowerReply& lowered,
                                  const knowledge::TpuGeneration& target, json& metrics) {
  const auto predicted = predicted_total(predictions);
  if (!predicted) return std::nullopt;
  return *predicted + outside_work_seconds(lowered, target, metrics);
}

// The TPU compiler's prediction for a lowered program (libtpu's static cycles at the generation's
// clock), when the worker compiled it for the target; recorded in `metrics`.
// A compile that gave no estimate (over a limit, libtpu missing) is recorded too, so the node
// says why it has no score on the compiler's basis.
std::optional<double> compiler_score(const tpu::LowerReply& lowered, json& metrics) {
  if (lowered.tpu_compile.is_object()) metrics["tpu_compile"] = lowered.tpu_compile;
  if (lowered.compile_status != "compiled") return std::nullopt;
  const std::optional<double> s = lowered.compiled_predicted_s;
  if (!s || *s <= 0) return std::nullopt;
  return s;
}

// Why a correct kernel has no speedup vs XLA's compiled program: the TPU compiler gave the
// reference an estimate but not this kernel, and the model's prediction is another basis.
std::string not_compared_reason(const tpu::LowerReply& lowered) {
  const json& cand = tpu::field(lowered.tpu_compile, "candidate");
  std::string why = lowered.compile_status.empty() ? "no compile" : lowered.compile_status;
  if (const json& reason = tpu::field(cand, "reason"); reason.is_string())
    why += ": " + reason.get<std::string>();
  return "not compared with XLA's compiled program: the TPU compiler gave no estimate for this "
         "kernel (" +
         why + "); its model prediction ranks it among kernels on that basis only";
}

Evaluation failure(std::string stage, std::string error, json locations = json::array()) {
  Evaluation e;
  e.status = NodeStatus::failed;
  e.stage = std::move(stage);
  e.error = std::move(error);
  e.locations = std::move(locations);
  return e;
}

Evaluation from_reply_failure(const tpu::WorkerReply& reply, const std::string& stage) {
  if (reply.status == tpu::WorkerReply::Status::Cancelled) return failure("cancelled", "cancelled");
  if (reply.status == tpu::WorkerReply::Status::Failed) {
    const tpu::ReplyFault err = tpu::read_reply_fault(tpu::field(reply.body, "error"));
    return failure(err.kind.empty() ? stage : err.kind, describe_worker_error(err),
                   err.locations_as_written);
  }
  std::string why = std::string(tpu::to_string(reply.status)) + ": " + reply.message;
  if (!reply.stderr_tail.empty()) why += "\n" + reply.stderr_tail;
  return failure("host", why);
}

// A job whose reply failed: the failure, where it ran and how long it took.
Evaluation failed_job(const tpu::JobResult& job, const std::string& stage,
                      std::chrono::steady_clock::time_point start) {
  Evaluation e = from_reply_failure(job.reply, stage);
  e.host_seconds = seconds_since(start);
  e.host = job.host;
  return e;
}

}  // namespace

tpu::KernelRequest kernel_request(const EvaluationSetup& setup, const std::string& source) {
  tpu::KernelRequest request;
  request.file = setup.file;
  request.source = source;
  request.normalized_source = syntax::normalized_python_source(source);
  request.kernel = setup.kernel;
  request.task = setup.task;
  request.options = setup.options;
  return request;
}

tpu::KernelRequest lowering_request(const EvaluationSetup& setup, const std::string& source) {
  tpu::KernelRequest request = kernel_request(setup, source);
  request.options["target"] = "tpu";
  request.options.erase("shrink");  // lowering is always at the task's full shapes
  request.options.erase("extra_shapes");
  // A search scores XLA once, at its root (the reference op compiles XLA's program): the
  // candidates' lowering compiles only the candidate, not XLA again on every worker.
  request.options["compile_reference"] = false;
  return request;
}

std::string describe_worker_error(const tpu::ReplyFault& error) {
  std::string text = (error.kind.empty() ? std::string("error") : error.kind) + ": " +
                     (error.message.empty() ? std::string("(no message)") : error.message);
  if (!error.locations.empty() && error.locations[0].line > 0)
    text += " (line " + std::to_string(error.locations[0].line) + ")";
  return text;
}

std::string describe_worker_error(const json& error) {
  return describe_worker_error(tpu::read_reply_fault(error));
}

std::string score_label(const std::string& time_kind, const knowledge::TpuGeneration& target) {
  if (time_kind == "device") return "measured (device)";
  if (time_kind == "predicted") return "predicted (model, " + target.name + ")";
  if (time_kind == "compiled") return "predicted (TPU compiler, " + target.name + ")";
  return "unscored";
}

std::string CandidateEvaluator::lowering_error(const std::string& source,
                                               const std::function<bool()>& cancelled) {
  const tpu::JobResult lowered = jobs_.lower(lowering_request(setup_, source), cancelled);
  if (lowered.reply.ok()) return "";
  return from_reply_failure(lowered.reply, "lowering").error;
}

std::string debug_text(const Evaluation& evaluation) {
  if (evaluation.status == NodeStatus::correct) return "";
  std::string text = evaluation.error.empty() ? evaluation.stage : evaluation.error;
  if (evaluation.locations.is_array()) {
    int listed = 0;
    for (const json& l : evaluation.locations) {
      if (!l.is_object() || !l.contains("line") || ++listed > 5) continue;
      text += "\n  at line " + std::to_string(l.value("line", 0)) + ": " +
              l.value("message", std::string()).substr(0, 300);
    }
  }
  const json report = evaluation.metrics.value("correctness_report", json::object());
  if (report.is_object() && report.contains("text") && report["text"].is_string())
    text += "\n\n" + report["text"].get<std::string>();
  return text;
}

std::string CandidateEvaluator::debug_error(const std::string& source,
                                            const std::function<bool()>& cancelled) {
  {
    std::lock_guard lock(shapes_mutex_);
    if (setup_.extra_shapes && !setup_.extra_shapes->settled)
      return lowering_error(source, cancelled);
  }
  const Evaluation e = evaluate(source, cancelled);
  // An error of the candidate's (lowering, compile, trace, run time) with its locations; a
  // cancelled evaluation or a failed host is nothing its author can fix.
  if (e.status == NodeStatus::failed)
    return e.stage == "cancelled" || e.stage == "host" ? "" : debug_text(e);
  // Wrong numbers, with the worker's report. The other verdicts (work outside the kernel, a
  // clock faster than the hardware) are the evaluation's to report, as before.
  if (e.status == NodeStatus::incorrect && e.metrics.contains("correctness_report"))
    return debug_text(e);
  return "";
}

Evaluation CandidateEvaluator::evaluate(const std::string& source,
                                        const std::function<bool()>& cancelled) {
  const auto start = std::chrono::steady_clock::now();
  tpu::KernelRequest request = kernel_request(setup_, source);

  // 1. The compile check: lowering for TPU raises the block-shape and Mosaic errors.
  const tpu::JobResult lowered = jobs_.lower(lowering_request(setup_, source), cancelled);
  if (!lowered.reply.ok()) return failed_job(lowered, "lowering", start);
  const tpu::LowerReply lowering = tpu::read_lower_reply(lowered.reply.body);
  if (lowering.pallas_calls.empty()) {
    Evaluation e = failure("lowering", "the candidate has no pallas_call: it cannot be scored");
    e.host_seconds = seconds_since(start);
    return e;
  }

  // 2. Correctness against the frozen reference (and at the run's extra shapes), and timing.
  bool settling = false;  // this is the kernel as written: checked at the shapes, not held to them
  {
    std::lock_guard lock(shapes_mutex_);
    if (setup_.extra_shapes) {
      ExtraShapes& shapes = *setup_.extra_shapes;
      if (!shapes.settled && shapes.cases.empty()) shapes.settled = true;
      settling = !shapes.settled;
      if (!shapes.cases.empty()) request.options["extra_shapes"] = shapes.worker_option(!settling);
    }
  }
  const tpu::JobResult tested = jobs_.test(request, setup_.use_cache, cancelled);
  if (!tested.reply.ok()) return failed_job(tested, "execution", start);
  Evaluation e;
  e.host = tested.host;
  const tpu::EvaluateReply reply = tpu::read_evaluate_reply(tested.reply.body);
  e.cache_hit = tested.from_cache;
  const json predictions = predictions_of(lowering, target_);
  // The worker's timing, seeds, run mode and instance go into the metrics as it wrote them.
  e.metrics = {{"correct", reply.correct},
               {"time_kind", reply.time_kind},
               {"timing", reply.timing},
               {"pallas_calls", lowering.pallas_calls},
               {"predictions", predictions},
               {"speedup_vs_reference", reply.speedup ? json(*reply.speedup) : json()},
               {"seeds", reply.seeds_json},
               {"run_mode", reply.run_mode},
               // "shrunk" when correctness was checked on a smaller instance of the task.
               {"instance", reply.instance}};
  if (!e.host.empty()) e.metrics["host"] = e.host;  // which host of a pool evaluated it
  if (!reply.extra_shapes.is_null()) e.metrics["extra_shapes"] = reply.extra_shapes;
  if (settling && reply.correct) {
    // The set every later candidate is held to: what the kernel as written passes.
    std::lock_guard lock(shapes_mutex_);
    setup_.extra_shapes->settle(reply.extra_shapes);
    e.metrics["extra_shapes_set"] = setup_.extra_shapes->to_json();
  }
  // The task's minimum work (the worker's count of the reference), for the node's diagnosis.
  if (lowering.task_work.is_object()) e.metrics["task_work"] = lowering.task_work;
  if (!reply.correct) {
    e.status = NodeStatus::incorrect;
    e.stage = "correctness";
    const tpu::ReplyFault& f = reply.failure;
    e.error = "incorrect: " + (!f.message.empty()       ? f.message
                               : f.as_written.is_null() ? json::object().dump()
                                                        : f.as_written.dump());
    // Where and how the outputs differ (tpu/worker/mkworker/judge/mismatch.py), for the debugger
    // and HITL.
    if (f.report.is_object()) e.metrics["correctness_report"] = f.report;
  } else {
    e.status = NodeStatus::correct;
    const std::optional<double> median = timed_median(reply.candidate);
    if (reply.time_kind == "device" && median) {
      e.score_s = median;
      e.time_kind = "device";
    } else if (reply.platform == "gpu") {
      // A kernel interpreted on a GPU host (a TPU kernel there): neither its interpreter time nor
      // a TPU prediction compares with the kernels measured on the GPU. Correct, not scored.
      e.metrics["unscored"] =
          reply.run_mode_note.empty()
              ? std::string("interpreted on a GPU host: not comparable with measured kernels")
              : reply.run_mode_note;
    } else if (auto compiled = compiler_score(lowering, e.metrics);
               compiled && !reference_not_compiled_) {
      // (the kernel's compile record is kept either way: its compile check stands when XLA's
      // program got no estimate)
      e.score_s = compiled;
      e.time_kind = "compiled";
    } else if (auto predicted = model_score(predictions, lowering, target_, e.metrics)) {
      e.score_s = predicted;
      e.time_kind = "predicted";
      if (reference_compiled_) e.metrics["unscored"] = not_compared_reason(lowering);
    }
  }
  e.host_seconds = seconds_since(start);
  return e;
}

std::optional<ExtraShapes> CandidateEvaluator::extra_shapes() const {
  std::lock_guard lock(shapes_mutex_);
  return setup_.extra_shapes;
}

json CandidateEvaluator::device_profile(const std::string& source,
                                        const std::function<bool()>& cancelled) {
  tpu::KernelRequest request = kernel_request(setup_, source);
  request.options.erase("shrink");  // a profile times the task's own shapes
  const tpu::JobResult profiled = jobs_.profile(request, cancelled);
  if (!profiled.reply.ok()) {
    spdlog::warn("profile of the new best kernel failed: {}",
                 from_reply_failure(profiled.reply, "profile").error);
    return nullptr;
  }
  return profiled.reply.body;
}

TuningOutcome CandidateEvaluator::autotune(const std::string& source, const json& space,
                                           const std::function<bool()>& cancelled) {
  TuningOutcome out;
  tpu::TuningResult tuned;
  tpu::KernelRequest request = kernel_request(setup_, source);
  // The worker ranks by the TPU compiler's cycles where it can; where the XLA root was not
  // compiled, the run's scores are the model's, so the configurations are scored that way too.
  if (reference_not_compiled_) request.options["rank_by"] = "run";
  try {
    tuned = jobs_.autotune(request, space, cancelled);
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  out.evaluated = tuned.evaluated;
  out.cache_hits = tuned.cache_hits;
  if (!tuned.reply.ok()) {
    out.error = from_reply_failure(tuned.reply, "autotune").error;
    return out;
  }
  out.configs = static_cast<int>(tuned.results.size());
  // No body when the tuning cache answered every configuration.
  if (tuned.reply.body.is_object()) out.ranking = tuned.reply.body.value("ranking", json());
  for (const json& r : tuned.results) {
    if (r.value("status", "") == "ranked") ++out.unchecked;
    if (r.value("status", "") != "ok") continue;
    ++out.correct;
    // Scored as evaluate scores a node, so the phase's choice agrees with the search's ranking.
    std::optional<double> score;
    std::string kind;
    const json timing = r.value("timing", json::object());
    const json median = timing.is_object() ? timing.value("median_s", json()) : json();
    const json run_mode = r.value("run_mode", json::object());
    const json compiled_s = r.value("predicted_s", json());
    if (r.value("time_kind", "") == "device" && median.is_number()) {
      score = median.get<double>();
      kind = "device";
    } else if (r.value("time_kind", "") == "compiled" && compiled_s.is_number() &&
               compiled_s.get<double>() > 0 && !reference_not_compiled_) {
      // Ranked by the TPU compiler in the worker: the compile that ranked it is its score.
      score = compiled_s.get<double>();
      kind = "compiled";
    } else if (run_mode.value("platform", std::string()) != "gpu") {
      // Interpret time never ranks: the model predicts this configuration from its lowering.
      std::string configured;
      try {
        configured = apply_config(source, r.value("config", json::object()));
      } catch (const std::exception& e) {
        spdlog::debug("autotune: {}", e.what());
        continue;
      }
      const tpu::JobResult lowered = jobs_.lower(lowering_request(setup_, configured), cancelled);
      if (!lowered.reply.ok()) continue;
      const tpu::LowerReply lowering = tpu::read_lower_reply(lowered.reply.body);
      json unused = json::object();
      if (!reference_not_compiled_ && (score = compiler_score(lowering, unused))) {
        kind = "compiled";
      } else {
        score = model_score(predictions_of(lowering, target_), lowering, target_, unused);
        if (score) kind = "predicted";
      }
    }
    if (!score) continue;
    out.scores.push_back({r.value("config", json::object()), *score, kind});
    if (!out.best_s || *score < *out.best_s) {
      out.best_s = score;
      out.best_config = out.scores.back().config;
      out.time_kind = kind;
    }
  }
  return out;
}

Evaluation CandidateEvaluator::evaluate_reference(const std::function<bool()>& cancelled) {
  const auto start = std::chrono::steady_clock::now();
  tpu::KernelRequest request;
  request.file = setup_.file;
  request.task = setup_.task;
  request.options = setup_.options;
  const tpu::JobResult r = jobs_.reference(request, cancelled);
  if (!r.reply.ok()) return failed_job(r, "execution", start);
  const json& body = r.reply.body;
  const json cost = body.value("cost", json::object());
  Evaluation e;
  e.status = NodeStatus::correct;  // the reference is the oracle
  e.host = r.host;
  e.metrics = {{"correct", true},
               {"reference", true},
               {"xla_cost", cost},
               {"time_kind", body.value("time_kind", "")},
               {"timing", body.value("timing", json())}};
  // A CPU host answers "timing": null (nothing is timed there).
  const std::optional<double> median =
      timed_median(tpu::read_timed_runs(tpu::field(body, "timing"), "reference"));
  const json compiled = body.value("tpu_compile", json::object());
  // Kept whatever its status: a compile over a limit says why the run falls back to the model.
  if (!compiled.empty()) e.metrics["tpu_compile"] = compiled;
  if (body.value("time_kind", "") == "device" && median) {
    e.score_s = median;
    e.time_kind = "device";
  } else if (compiled.value("status", std::string()) == "compiled" &&
             compiled.value("predicted_s", json()).is_number() &&
             compiled["predicted_s"].get<double>() > 0) {
    // XLA's compiled program for the target, scored by the same compiler as the candidates.
    e.score_s = compiled["predicted_s"].get<double>();
    e.time_kind = "compiled";
    std::string basis = "XLA's program compiled for " + target_.name +
                        " by the TPU compiler (libtpu static cycles at the generation's clock)";
    if (const json& stood_in = tpu::field(compiled, "cost_model_ops"); stood_in.is_object()) {
      // The static profile left a convolution or matmul at 0: XLA's own estimate stands in.
      std::string ops;
      for (const auto& [op, cycles] : stood_in.items()) ops += (ops.empty() ? "" : ", ") + op;
      if (!ops.empty()) basis += "; XLA's cost-model estimate for " + ops + " (0 in the profile)";
    }
    if (tpu::field(compiled, "hbm_floor").is_object())
      basis +=
          "; at the floor of its inputs and outputs moved once at HBM bandwidth (the profile "
          "gave fewer cycles)";
    e.metrics["prediction"] = {{"predicted_s", *e.score_s}, {"basis", basis}};
  } else if (cost.value("flops", json()).is_number() &&
             cost.value("min_bytes", json()).is_number()) {
    knowledge::KernelCostFacts facts;
    facts.flops = cost["flops"].get<double>();
    facts.hbm_bytes = cost["min_bytes"].get<double>();
    facts.grid_steps = 0;  // one XLA program: no Pallas grid-step overhead
    if (auto shapes = cost.value("input_shapes", json::array()); !shapes.empty())
      facts.compute_dtype = shapes[0].value("dtype", "float32");
    if (auto predicted = knowledge::predict_time(facts, target_)) {
      e.score_s = predicted->seconds;
      e.time_kind = "predicted";
      e.metrics["prediction"] = {{"predicted_s", predicted->seconds},
                                 {"compute_s", predicted->compute_seconds},
                                 {"memory_s", predicted->memory_seconds},
                                 {"bound", predicted->bound},
                                 {"basis",
                                  "XLA at its roofline: the reference's FLOPs, inputs "
                                  "read and outputs written once"}};
    }
  }
  reference_not_compiled_ = e.time_kind == "predicted";
  reference_compiled_ = e.time_kind == "compiled";
  e.host_seconds = seconds_since(start);
  return e;
}

}  // namespace mk::agents
