#include "lsp/server/kernel_runs.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string_view>

#include "lsp/protocol/json_rpc.h"
#include "lsp/server/lsp_convert.h"
#include "lsp/server/uri.h"
#include "service/operand_errors.h"
#include "source/analysis/vmem.h"
#include "source/syntax/normalize.h"
#include "tpu/host/content_hash.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::server {

using nlohmann::json;
namespace ec = rpc::error_code;

std::string kernel_site_hash(const OpenDocument& doc, const pallas::Kernel& k) {
  const std::string& text = doc.text.text();
  const size_t end = std::min<size_t>(k.site_span.end, text.size());
  const size_t start = std::min<size_t>(k.site_span.start, end);
  return tpu::sha256_hex(
             syntax::normalized_python_source(std::string_view(text).substr(start, end - start)))
      .substr(0, 16);
}

KernelRuns::KernelRuns(ServerPort& server, service::Workspace& workspace, ProgressTracker& progress)
    : server_(server), workspace_(workspace), progress_(progress) {}

KernelRuns::~KernelRuns() {
  cancel_all();
}

void KernelRuns::configure(const HostSettings& settings) {
  // Rebuilt on next use; running jobs keep theirs alive until they end.
  if (settings.hosts != settings_.hosts || settings.local_python != settings_.local_python)
    workspace_.retire_hosts();
  settings_ = settings;
}

std::shared_ptr<tpu::HostPool> KernelRuns::shared_host(std::string& error) {
  const std::optional<service::HostChoice> choice = host_choice_of(settings_, error);
  return choice ? workspace_.warm_hosts(*choice, error) : nullptr;
}

std::optional<tpu::KernelRequest> KernelRuns::request_for(OpenDocument& doc, const json& options,
                                                          std::string& reason) const {
  auto path = path_of_uri(doc.text.uri());
  if (!path) {
    reason = "only file:// documents can run on a host";
    return std::nullopt;
  }
  const bool infile = doc.analysis && doc.analysis->model.task.form() == "infile";
  return service::Workspace::kernel_request(*path, doc.text.text(), infile, reason, std::nullopt,
                                            options);
}

json KernelRuns::start(const std::string& kind, OpenDocument& doc, size_t kernel_index,
                       const json* work_done_token, const knowledge::TpuGeneration& target) {
  if (!doc.analysis || kernel_index >= doc.analysis->model.kernels.size()) {
    throw rpc::RpcError(ec::kInvalidParams,
                        "params.arguments[0].kernel: no such kernel in the document");
  }
  const pallas::Kernel& kernel = doc.analysis->model.kernels[kernel_index];
  std::string reason;
  const std::optional<tpu::KernelRequest> made = request_for(doc, json::object(), reason);
  if (!made) throw rpc::RpcError(ec::kRequestFailed, reason);
  const tpu::KernelRequest& request = *made;
  std::string error;
  std::shared_ptr<tpu::HostPool> h = shared_host(error);
  if (!h) throw rpc::RpcError(ec::kRequestFailed, error);
  std::shared_ptr<knowledge::Store> store = workspace_.cache();

  const std::string job_id = "job-" + std::to_string(next_job_++);
  const std::string title =
      std::string("MaxKernel: ") + (kind == "test" ? "Test " : "Profile ") + kernel.name;
  const std::string token = progress_.begin(title, work_done_token);
  progress_.report(token, "on " + h->name());
  auto cancelled = workspace_.jobs().add(job_id, kJobGroup, token, doc.text.uri());

  KernelResult pending;
  pending.kind = kind;
  pending.kernel_name = kernel.name;
  pending.site_hash = kernel_site_hash(doc, kernel);
  pending.version = doc.text.version();
  pool_.submit([this, h, store, request, kind, job_id, uri = doc.text.uri(), pending, cancelled,
                token, target] {
    service::KernelCheckOptions options;
    if (kind == "profile") options.target = &target;
    options.cancelled = [cancelled] { return cancelled->load(); };
    options.on_progress = [this, token](const std::string& stage) {
      server_.post([this, token, stage] { progress_.report(token, stage); });
    };
    const service::KernelCheck check = service::run_kernel_check(
        kind == "test" ? service::KernelOp::Test : service::KernelOp::Profile, *h, store.get(),
        request, options);
    KernelResult result = pending;
    result.verdict = check.summary;
    result.hint = check.hint;
    result.diagnosis = check.diagnosis;
    result.origin = "Profile on " + check.host;
    server_.post([this, job_id, uri, result] { finish(job_id, uri, result); });
  });
  return {{"status", "started"}, {"job", job_id}, {"progressToken", json::parse(token)}};
}

void KernelRuns::finish(const std::string& job_id, const std::string& uri, KernelResult result) {
  if (const std::optional<service::Job> job = workspace_.jobs().remove(job_id))
    progress_.end(job->progress, result.verdict.message.substr(0, 120));
  results_[uri][result.kind + ":" + result.kernel_name] = std::move(result);
  server_.refresh_after_run(uri);
}

void KernelRuns::on_save(OpenDocument& doc) {
  if (!settings_.lower_on_save || !doc.python || !doc.analysis ||
      doc.analysis->model.kernels.empty())
    return;
  const std::string uri = doc.text.uri();
  if (lowering_.count(uri)) {
    lowering_[uri] = true;  // lower again with the newest text when the current run ends
    return;
  }
  // Without a TPU attached, the worker compiles it for the target with the TPU compiler
  // (libtpu): Mosaic's VMEM and layout refusals show on save like lowering errors.
  const json options = {{"target", "tpu"}, {"generation", settings_.target}};
  std::string reason;
  std::optional<tpu::KernelRequest> request = request_for(doc, options, reason);
  if (!request) return;  // nothing to lower against: the static checks still run
  std::string error;
  std::shared_ptr<tpu::HostPool> h = shared_host(error);
  if (!h || !h->all_local()) return;  // on-save lowering stays local
  lowering_[uri] = false;
  const int64_t version = doc.text.version();
  // The model and lines of the saved text: an error naming an operand goes on its BlockSpec.
  pallas::PallasModel model = doc.analysis ? doc.analysis->model : pallas::PallasModel{};
  text::LineIndex lines = doc.text.lines();
  pool_.submit([this, h, request = std::move(*request), uri, version, model = std::move(model),
                lines = std::move(lines)] {
    service::KernelCheck check =
        service::run_kernel_check(service::KernelOp::Lower, *h, nullptr, request, {});
    for (service::Finding& f : check.line_findings)
      service::place_on_operand(f, check.error_message, model, lines);
    server_.post([this, check = std::move(check), uri, version] {
      if (check.verdict == service::Verdict::NotRun || check.verdict == service::Verdict::Cancelled)
        spdlog::warn("on-save lowering of {} did not run: {}", uri, check.message);
      KernelResult result;
      result.kind = "lower";
      result.version = version;
      result.line_findings = check.line_findings;
      if (check.lists_calls) lowered_[uri] = {version, check.lowered};
      results_[uri]["lower:"] = std::move(result);
      const bool again = lowering_[uri];
      lowering_.erase(uri);
      server_.refresh_after_run(uri);
      if (OpenDocument* d = again ? server_.find_document(uri) : nullptr) on_save(*d);
    });
  });
}

bool KernelRuns::cancel_job(const std::string& job_id) {
  const service::Job* job = workspace_.jobs().find(job_id);
  return job && job->group == kJobGroup && workspace_.jobs().cancel(job_id);
}

void KernelRuns::cancel_all() {
  workspace_.jobs().cancel_group(kJobGroup);
}

json KernelRuns::diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis& a) const {
  json out = json::array();
  auto it = results_.find(doc.text.uri());
  if (it == results_.end()) return out;
  for (const auto& [key, r] : it->second) {
    for (service::Finding f : r.line_findings) {
      if (r.version != doc.text.version()) {
        f.severity = service::Severity::Hint;
        f.message = "[stale: from version " + std::to_string(r.version) + "] " + f.message;
      }
      out.push_back(to_lsp_diagnostic(doc.text, f));
    }
    if (r.verdict.message.empty()) continue;
    const pallas::Kernel* k = a.model.kernel_named(r.kernel_name);
    if (!k) continue;
    service::Finding verdict = r.verdict;
    verdict.span = k->call_span;
    if (kernel_site_hash(doc, *k) != r.site_hash) {
      verdict.severity = service::Severity::Hint;
      verdict.message = "[stale: the kernel changed since this run] " + verdict.message;
      verdict.related.clear();  // the lines it named may have moved
    }
    out.push_back(to_lsp_diagnostic(doc.text, verdict));
  }
  return out;
}

std::string KernelRuns::hover_addendum(OpenDocument& doc, const pallas::Kernel& kernel,
                                       const knowledge::TpuGeneration& target) const {
  return lowered_addendum(doc, kernel, target) + diagnosis_addendum(doc, kernel);
}

std::string KernelRuns::lowered_addendum(OpenDocument& doc, const pallas::Kernel& kernel,
                                         const knowledge::TpuGeneration& target) const {
  auto it = lowered_.find(doc.text.uri());
  if (it == lowered_.end()) return "";
  const auto& [version, calls] = it->second;
  // The worker names each pallas_call by the line of its call; match it to this kernel.
  const uint32_t line = doc.text.position_of(kernel.call_span.start).line + 1;
  const service::LoweredCall* call = nullptr;
  for (const service::LoweredCall& c : calls) {
    if (c.line == static_cast<int>(line)) call = &c;
  }
  if (!call && calls.size() == 1 && doc.analysis && doc.analysis->model.kernels.size() == 1)
    call = &calls[0];
  if (!call) return "";
  std::string md = "\n---\n**Lowered for TPU** (exact, from the last save";
  md += version == doc.text.version() ? ")" : "; stale: the document changed since)";
  md += "\n\n- grid `" + call->grid + "`";
  if (call->vmem_bytes_per_step) {
    md += ", VMEM per step " + analysis::format_bytes(*call->vmem_bytes_per_step);
    if (auto limit = target.scoped_vmem_limit())
      md += " of " + analysis::format_bytes(*limit) + " on " + target.name;
  }
  md += "\n";
  for (const service::LoweredOperand& op : call->operands)
    md += "- " + op.role + " block `" + op.block_shape + "` of `" + op.array_shape + "` " +
          op.dtype + "\n";
  const service::Prediction p = service::predict_call(*call, target);
  if (p.unavailable.empty()) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "- %.3g FLOP/byte (ridge %.3g on %s): %s-bound; %s %s\n",
                  p.arithmetic_intensity, p.ridge_intensity, target.name.c_str(), p.bound.c_str(),
                  analysis::format_seconds(p.predicted_s).c_str(), p.label.c_str());
    md += buf;
  }
  return md;
}

std::string KernelRuns::diagnosis_addendum(OpenDocument& doc, const pallas::Kernel& kernel) const {
  auto it = results_.find(doc.text.uri());
  if (it == results_.end()) return "";
  auto r = it->second.find("profile:" + kernel.name);
  if (r == it->second.end() || !r->second.diagnosis) return "";
  const bool stale = kernel_site_hash(doc, kernel) != r->second.site_hash;
  return diagnosis_markdown(*r->second.diagnosis, r->second.origin, stale);
}

json KernelRuns::inlay_hints(OpenDocument& doc, const analysis::DocumentAnalysis& a) const {
  json out = json::array();
  auto it = results_.find(doc.text.uri());
  if (it == results_.end()) return out;
  for (const auto& [key, r] : it->second) {
    if (r.hint.empty()) continue;
    const pallas::Kernel* k = a.model.kernel_named(r.kernel_name);
    if (!k) continue;
    const bool stale = kernel_site_hash(doc, *k) != r.site_hash;
    out.push_back(to_inlay_hint(doc.text, k->call_span.end, r.hint + (stale ? " (stale)" : ""),
                                r.verdict.message));
    if (r.diagnosis)
      out.push_back(to_diagnosis_hint(doc.text, k->call_span.end, *r.diagnosis, stale));
  }
  return out;
}

}  // namespace mk::server
