#include "service/hitl_phases.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "agents/orchestration/autotune_phase.h"
#include "agents/orchestration/rule_expander.h"  // candidate_hash
#include "service/kernel_checks.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {

using nlohmann::json;

namespace {

std::string seconds_text(double s) {
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

Finding line_finding(int line, Severity severity, const std::string& code,
                     const std::string& message) {
  Finding f;
  f.line = line;
  f.severity = severity;
  f.code = code;
  f.message = message;
  return f;
}

// The 0-based line of the named kernel's pallas_call in `code` (0 when not found).
int kernel_line(const std::string& code, const std::string& kernel) {
  std::istringstream in(code);
  std::string line;
  int first_call = -1;
  for (int n = 0; std::getline(in, line); ++n) {
    if (!kernel.empty() && line.find("def " + kernel + "(") != std::string::npos) return n;
    if (first_call < 0 && line.find("pallas_call(") != std::string::npos) first_call = n;
  }
  return std::max(first_call, 0);
}

std::string evaluation_text(const agents::Evaluation& e, const knowledge::TpuGeneration& target) {
  if (e.status == agents::NodeStatus::correct) {
    std::string text = "correct";
    if (e.score_s)
      text += ", " + seconds_text(*e.score_s) + " " + agents::score_label(e.time_kind, target);
    return text;
  }
  if (e.status == agents::NodeStatus::incorrect) return e.error;
  return "failed (" + e.stage + "): " + e.error;
}

// Why planning/implementing failed, in words that say what the user can do next.
std::string failure_text(const std::string& what, const std::exception& e) {
  if (const auto* llm_error = dynamic_cast<const llm::LlmError*>(&e))
    return what + " failed: the LLM call failed (" + llm::to_string(llm_error->kind()) +
           "): " + e.what() + "; Retry asks again, Skip moves on, Stop ends the session";
  return what + " failed: " + e.what() + "; Retry asks again, Skip moves on, Stop ends the session";
}

// Test and autotune compare timings, so several hosts must first agree on one device; then
// `body` scores candidates with one evaluator over the pool, cached in `cache` when it is set
// (autotune; the test phase runs the candidate the user asked for). `phase` names the step if
// refused.
template <typename Body>
HitlPhaseOutcome with_evaluator(const HitlHostJob& job, agents::HitlPhase phase, Body&& body,
                                knowledge::Store* cache = nullptr) {
  std::string error;
  if (job.host->size() > 1 && !job.host->verify(error)) {
    HitlPhaseOutcome refused;
    refused.summary = to_string(phase) + " cannot run: " + error;
    return refused;
  }
  tpu::KernelJobs jobs(*job.host, cache);
  agents::CandidateEvaluator evaluator(jobs, {job.request.file, job.request.task, std::nullopt},
                                       *job.target);
  return body(evaluator);
}

}  // namespace

HitlPhaseOutcome hitl_plan(agents::Proposer& proposer, const agents::PlanRequest& request) {
  HitlPhaseOutcome out;
  try {
    out.plan = proposer.plan(request);
    const size_t items = agents::ticked_plan_items(out.plan).size();
    out.summary = std::to_string(items) + " strateg" + (items == 1 ? "y" : "ies") +
                  " proposed; untick or edit them in plan.md, then approve";
  } catch (const std::exception& e) {
    out.summary = failure_text("planning", e);
  }
  out.usage = proposer.usage();
  out.llm_calls = proposer.llm_calls();
  return out;
}

HitlPhaseOutcome hitl_implement(agents::Proposer& proposer,
                                const agents::ImplementRequest& request) {
  HitlPhaseOutcome out;
  try {
    agents::Implementation impl = proposer.implement(request);
    if (impl.code.empty() || impl.code == request.code) {
      out.summary = "nothing to apply (no ticked strategy applies to the current code)";
    } else {
      out.proposed = std::move(impl.code);
      out.summary = "applied " + std::to_string(impl.applied.size()) + " of " +
                    std::to_string(impl.applied.size() + impl.skipped.size()) +
                    " ticked strategies";
      for (const std::string& a : impl.applied) out.summary += "; " + a;
    }
  } catch (const std::exception& e) {
    out.summary = failure_text("implementing", e);
  }
  out.usage = proposer.usage();
  out.llm_calls = proposer.llm_calls();
  return out;
}

HitlPhaseOutcome hitl_debug(agents::Proposer& proposer, const agents::DebugRequest& request) {
  HitlPhaseOutcome out;
  try {
    out.fix = proposer.debug(request);
    // The lines that differ from the failing file, counted as the line diff the edit will carry.
    std::istringstream before(request.code), after(out.fix);
    std::multiset<std::string> old_lines;
    for (std::string line; std::getline(before, line);) old_lines.insert(line);
    int changed = 0;
    for (std::string line; std::getline(after, line);) {
      const auto it = old_lines.find(line);
      if (it == old_lines.end())
        ++changed;
      else
        old_lines.erase(it);
    }
    out.summary = "the debugger proposed a fix (attempt " + std::to_string(request.attempt) +
                  " of " + std::to_string(request.max_attempts) + ", " + std::to_string(changed) +
                  " line(s) new) in fix.py: edit it if you like, save it, then Run the fix";
  } catch (const std::exception& e) {
    out.summary = failure_text("debugging", e);
  }
  out.usage = proposer.usage();
  out.llm_calls = proposer.llm_calls();
  return out;
}

HitlPhaseOutcome hitl_validate(const HitlHostJob& job) {
  tpu::HostPool* h = job.host;
  const tpu::KernelRequest& request = job.request;
  const std::string& code = job.code;
  const std::string& kernel = job.kernel;
  const std::function<bool()>& is_cancelled = job.cancelled;
  tpu::KernelJobs jobs(*h, nullptr);
  tpu::KernelRequest lower = request;
  lower.options["target"] = "tpu";
  const tpu::JobResult r = jobs.lower(lower, is_cancelled);
  HitlPhaseOutcome out;
  out.has_diagnostics = true;
  const json& body = r.reply.body;
  if (r.reply.ok()) {
    const size_t calls = body.value("pallas_calls", json::array()).size();
    out.summary = "lowered for TPU on " + (r.host.empty() ? h->name() : r.host) + ": " +
                  std::to_string(calls) + " pallas_call(s), no errors";
  } else if (r.reply.status == tpu::WorkerReply::Status::Failed) {
    const json err = body.value("error", json::object());
    out.summary = "lowering failed: " + agents::describe_worker_error(err);
    const json locations = err.value("locations", json::array());
    for (const json& loc : locations) {
      const int line = std::max(1, loc.value("line", 1)) - 1;
      out.diagnostics.push_back(
          line_finding(line, Severity::Error, "MK310",
                       "step by step, validate: lowering for TPU failed (" +
                           err.value("kind", std::string("error")) +
                           "): " + loc.value("message", err.value("message", std::string()))));
      break;  // the deepest frame in the user's file comes first; the rest is the stack
    }
    if (locations.empty())
      out.diagnostics.push_back(line_finding(kernel_line(code, kernel), Severity::Error, "MK310",
                                             "step by step, validate: " + out.summary));
  } else {
    out.summary = std::string("lowering did not run: ") + tpu::to_string(r.reply.status) + ": " +
                  r.reply.message;
  }
  return out;
}

HitlPhaseOutcome hitl_test(const HitlHostJob& job) {
  return with_evaluator(job, agents::HitlPhase::test, [&](agents::CandidateEvaluator& evaluator) {
    const agents::Evaluation e = evaluator.evaluate(job.code, job.cancelled);
    HitlPhaseOutcome out;
    out.has_diagnostics = true;
    out.summary = "test on " + (e.host.empty() ? job.host->name() : e.host) + ": " +
                  evaluation_text(e, *job.target);
    // What the search's debugger would be sent (CandidateEvaluator::debug_error's cases): an
    // error of the candidate's own, or wrong numbers with the worker's report.
    const bool own_failure =
        e.status == agents::NodeStatus::failed && e.stage != "cancelled" && e.stage != "host";
    const bool wrong =
        e.status == agents::NodeStatus::incorrect && e.metrics.contains("correctness_report");
    if (own_failure || wrong) out.debug_report = agents::debug_text(e);
    out.diagnostics.push_back(line_finding(
        kernel_line(job.code, job.kernel),
        e.status == agents::NodeStatus::correct ? Severity::Information : Severity::Error, "MK311",
        "step by step, " + out.summary));
    agents::NodeRecord node;
    node.run_id = job.run_id;
    node.parent = 0;
    node.depth = 1;
    node.strategy = "hitl";
    node.description = "the session's candidate";
    node.code = job.code;
    node.code_hash = agents::candidate_hash(job.code);
    node.status = e.status;
    node.error = e.error;
    node.metrics = agents::NodeMetrics::from_json(e.metrics);
    node.score_s = e.score_s;
    node.time_kind = e.time_kind;
    out.node = std::move(node);
    return out;
  });
}

HitlPhaseOutcome hitl_autotune(const HitlHostJob& job) {
  return with_evaluator(
      job, agents::HitlPhase::autotune,
      [&](agents::CandidateEvaluator& evaluator) {
        const knowledge::TpuGeneration& target = *job.target;
        const int direction = job.diagnosis ? agents::preferred_block_direction(*job.diagnosis) : 0;
        const agents::AutotunePhase phase = agents::autotune_phase(
            evaluator, job.code, kHitlAutotuneConfigs, job.cancelled, std::nullopt, direction);
        const agents::TuningOutcome& t = phase.outcome;
        auto score_text = [&](const agents::ConfigScore& s) {
          return seconds_text(s.score_s) + " " + agents::score_label(s.time_kind, target);
        };
        HitlPhaseOutcome out;
        if (!phase.ran) {
          out.summary = "nothing to tune: the kernel has no block size or stage count to vary";
          return out;
        }
        const std::string error = phase.record.value("error", std::string());
        if (!error.empty()) {
          out.summary = "autotune failed: " + error;
          return out;
        }
        const std::string own = agents::config_text(phase.own_config);
        const std::string own_text =
            phase.own ? own + " at " + score_text(*phase.own) : own + " (not correct or unscored)";
        const std::string tried =
            std::to_string(t.configs) + " configurations tried, " +
            (job.uncached_reason.empty() ? std::to_string(t.cache_hits) + " from the tuning cache"
                                         : "uncached (" + job.uncached_reason + ")");
        if (phase.child) {
          out.proposed = phase.child->code;
          const agents::ConfigScore best{t.best_config, *t.best_s, t.time_kind};
          out.summary = "autotune: " + agents::config_text(t.best_config) + " at " +
                        score_text(best) + " beats the kernel's own " + own_text + "; " + tried;
        } else if (t.best_s) {
          out.summary = "no configuration beats the current one (" + own_text + "); " + tried;
        } else {
          out.summary = "no configuration is correct and scored; " + tried;
        }
        return out;
      },
      job.tuning_cache);
}

HitlPhaseOutcome hitl_profile(const HitlHostJob& job) {
  KernelCheckOptions options;
  options.target = job.target;
  options.cancelled = job.cancelled;
  const KernelCheck check =
      run_kernel_check(KernelOp::Profile, *job.host, nullptr, job.request, options);
  HitlPhaseOutcome out;
  const json& body = check.reply_body;
  if (check.verdict != Verdict::Passed) {
    out.summary =
        "profile did not run: " + (check.message.empty() ? check.error_message : check.message);
    return out;
  }
  const json facts = body.is_object() ? body.value("summary", json::object()) : json::object();
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", check.pallas_share * 100);
  out.summary = "profile on " + check.host + " (" +
                (check.measured.empty() ? "?" : check.measured) + " events): " + share +
                " of the time in Pallas kernels (" + seconds_text(check.pallas_time_s) + ")";
  out.report = "\n## Profile\n\n" + out.summary + "\n";
  if (check.diagnosis) {
    out.diagnosis = check.diagnosis;
    out.suggestion = agents::suggest_next_phase(check.diagnosis->diagnosis);
    out.summary += "; " + check.diagnosis->label;
    out.report += "\n### Diagnosis: " + check.diagnosis->label + "\n\n";
    for (const std::string& line : check.diagnosis->lines) out.report += "- " + line + "\n";
    if (out.suggestion)
      out.report += "\n### Suggested next: " +
                    (out.suggestion->phase ? to_string(*out.suggestion->phase)
                                           : std::string("accept the kernel")) +
                    "\n\n" + out.suggestion->why + "\n";
  } else {
    out.report += "\n(no diagnosis: the kernel did not lower for TPU at the task's shapes)\n";
  }
  out.report += "\n```json\n" + facts.dump(2) + "\n```\n";
  return out;
}

}  // namespace mk::service
