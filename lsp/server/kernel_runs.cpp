#include "lsp/server/kernel_runs.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <string_view>

#include "lsp/protocol/json_rpc.h"
#include "lsp/server/lsp_convert.h"
#include "source/analysis/vmem.h"
#include "source/syntax/normalize.h"
#include "tpu/host/content_hash.h"
#include "tpu/jobs/kernel_jobs.h"
#include "tpu/jobs/predictions.h"

namespace mk::server {

using nlohmann::json;
namespace ec = rpc::error_code;

namespace {

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Turns a finished evaluate into the diagnostic text and inlay hint the editor shows.
KernelResult describe_test(const tpu::JobResult& r, const std::string& host) {
  KernelResult out;
  const json& b = r.reply.body;
  const std::string cached = r.from_cache ? " (cached)" : "";
  if (!r.reply.ok() && r.reply.status != tpu::WorkerReply::Status::Failed) {
    out.severity = r.reply.status == tpu::WorkerReply::Status::Cancelled ? 3 : 2;
    out.message = "Test did not run on " + host + ": " + tpu::to_string(r.reply.status) + ": " +
                  r.reply.message;
    return out;
  }
  if (!b.value("ok", false)) {
    const json& e = b.value("error", json::object());
    out.severity = 1;
    out.message = "Test could not run (" + e.value("kind", std::string("error")) +
                  "): " + e.value("message", std::string());
    out.hint = " test: " + e.value("kind", std::string("error"));
    return out;
  }
  const size_t sets = b.value("seeds", json::array()).size();
  if (!b.value("correct", false)) {
    const json& f = b.value("failure", json::object());
    out.severity = 1;
    out.message = "Test failed on " + host + cached + " (" + f.value("kind", std::string("wrong")) +
                  "): " + f.value("message", std::string());
    out.hint = " wrong (" + f.value("kind", std::string("?")) + ")";
    return out;
  }
  out.severity = 3;
  out.message = "Test passed on " + host + cached + ": " + std::to_string(sets) +
                " fresh input sets, both run orders";
  if (b.contains("timing") && b["timing"].is_object() && b["timing"].contains("candidate")) {
    const json& t = b["timing"];
    const double cand = t["candidate"].value("median_s", 0.0);
    const std::string kind = t.value("time_kind", b.value("time_kind", std::string("?")));
    out.message += "; candidate " + analysis::format_seconds(cand) + " median (p10 " +
                   analysis::format_seconds(t["candidate"].value("p10_s", 0.0)) + ", p90 " +
                   analysis::format_seconds(t["candidate"].value("p90_s", 0.0)) + ")";
    if (t.contains("reference"))
      out.message +=
          ", reference " + analysis::format_seconds(t["reference"].value("median_s", 0.0));
    if (kind == "interpret") {
      out.message +=
          " [interpret time on the CPU: correctness is real, the time is not a kernel speedup]";
      out.hint = " " + analysis::format_seconds(cand) + " interpret · " + host;
    } else if (b.contains("speedup") && b["speedup"].is_number()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fx", b["speedup"].get<double>());
      out.message += std::string("; ") + buf + " vs the reference";
      out.hint = " " + analysis::format_seconds(cand) + " · " + buf + " vs XLA · " +
                 b.value("device_kind", host);
    } else {
      out.hint = " " + analysis::format_seconds(cand) + " · " + host;
    }
  }
  return out;
}

KernelResult describe_profile(const tpu::JobResult& r, const std::string& host) {
  KernelResult out;
  const json& b = r.reply.body;
  if (!r.reply.ok()) {
    out.severity = 2;
    out.message =
        "Profile did not run on " + host + ": " +
        (r.reply.message.empty() ? b.value("error", json::object()).value("message", std::string())
                                 : r.reply.message);
    return out;
  }
  const json& s = b.value("summary", json::object());
  const double share = s.value("pallas_share", 0.0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  out.severity = 3;
  out.message = "Profile on " + host + " (" + s.value("measured", std::string("?")) +
                " events): " + buf + " of the time in Pallas kernels (" +
                analysis::format_seconds(s.value("pallas_time_us", 0.0) * 1e-6) + ")";
  if (s.value("measured", std::string()) == "host")
    out.message += " [CPU interpret mode: host time, not device time]";
  out.hint = std::string(" profile: ") + buf + " in Pallas";
  return out;
}

}  // namespace

std::string kernel_site_hash(const OpenDocument& doc, const pallas::Kernel& k) {
  const std::string& text = doc.text.text();
  const size_t end = std::min<size_t>(k.site_span.end, text.size());
  const size_t start = std::min<size_t>(k.site_span.start, end);
  return tpu::sha256_hex(
             syntax::normalized_python_source(std::string_view(text).substr(start, end - start)))
      .substr(0, 16);
}

KernelRuns::KernelRuns(Context context, ProgressTracker& progress)
    : context_(std::move(context)), progress_(progress) {}

KernelRuns::~KernelRuns() {
  cancel_all();
}

void KernelRuns::configure(const HostSettings& settings) {
  if (settings.hosts != settings_.hosts || settings.local_python != settings_.local_python) {
    for (auto& [name, h] : hosts_) h->shutdown();
    hosts_.clear();  // rebuilt on next use; running jobs keep theirs alive through the pool
  }
  settings_ = settings;
}

std::string file_uri(const std::filesystem::path& path) {
  std::string out = "file://";
  for (const unsigned char c : path.string()) {
    if (std::isalnum(c) ||
        std::string_view("/-._~").find(static_cast<char>(c)) != std::string_view::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::optional<std::filesystem::path> path_of_uri(const std::string& uri) {
  if (!uri.starts_with("file://")) return std::nullopt;
  return std::filesystem::path(percent_decode(uri.substr(7)));
}

service::HostChoice host_choice_of(const HostSettings& settings) {
  service::HostChoice choice;
  std::string ignored;  // an empty name in the list is reported when the pool is opened
  if (!service::add_host_names(settings.default_host, choice.names, ignored)) choice.names.clear();
  for (const json& h : settings.hosts) choice.definitions.push_back(h.dump());
  choice.definitions_origin = "maxkernel.hosts";
  choice.local_python = settings.local_python;
  return choice;
}

std::unique_ptr<tpu::HostPool> make_host_pool(const HostSettings& settings, std::string& error) {
  std::vector<std::string> names;
  if (!service::add_host_names(settings.default_host, names, error)) return nullptr;
  return service::open_hosts(host_choice_of(settings), /*verify=*/false, error);
}

tpu::HostPool* KernelRuns::host(std::string& error) {
  const std::string& name = settings_.default_host;
  if (auto it = hosts_.find(name); it != hosts_.end()) return it->second.get();
  auto made = make_host_pool(settings_, error);
  if (!made) return nullptr;
  auto& slot = hosts_[name];
  slot = std::move(made);
  return slot.get();
}

std::optional<json> KernelRuns::task_for(OpenDocument& doc, std::string& reason) const {
  auto path = path_of_uri(doc.text.uri());
  if (!path) {
    reason = "only file:// documents can run on a host";
    return std::nullopt;
  }
  const bool infile = doc.analysis && doc.analysis->model.task.form() == "infile";
  return tpu::locate_task(*path, infile, reason);
}

json KernelRuns::start(const std::string& kind, OpenDocument& doc, size_t kernel_index,
                       const json* work_done_token) {
  if (!doc.analysis || kernel_index >= doc.analysis->model.kernels.size()) {
    throw rpc::RpcError(ec::kInvalidParams,
                        "params.arguments[0].kernel: no such kernel in the document");
  }
  const pallas::Kernel& kernel = doc.analysis->model.kernels[kernel_index];
  std::string reason;
  auto task = task_for(doc, reason);
  if (!task) throw rpc::RpcError(ec::kRequestFailed, reason);
  std::string error;
  tpu::HostPool* h = host(error);
  if (!h) throw rpc::RpcError(ec::kRequestFailed, error);
  if (!store_ && !store_failed_) {
    try {
      store_ = std::make_unique<knowledge::Store>(knowledge::default_store_path());
    } catch (const std::exception& e) {
      store_failed_ = true;
      spdlog::warn("evaluation cache disabled: {}", e.what());
    }
  }

  tpu::KernelRequest request;
  request.file = *path_of_uri(doc.text.uri());
  request.source = doc.text.text();
  request.normalized_source = syntax::normalized_python_source(request.source);
  request.task = *task;

  const std::string job_id = "job-" + std::to_string(next_job_++);
  const std::string title =
      std::string("MaxKernel: ") + (kind == "test" ? "Test " : "Profile ") + kernel.name;
  const std::string token = progress_.begin(title, work_done_token);
  progress_.report(token, "on " + h->name());
  Job job{doc.text.uri(), kind, kernel.name, token, std::make_shared<std::atomic<bool>>(false)};
  jobs_[job_id] = job;

  KernelResult pending;
  pending.kind = kind;
  pending.kernel_name = kernel.name;
  pending.site_hash = kernel_site_hash(doc, kernel);
  pending.version = doc.text.version();
  knowledge::Store* store = store_.get();
  auto cancelled = job.cancelled;
  auto post = context_.post;
  pool_.submit([this, h, store, request, kind, job_id, uri = doc.text.uri(), pending, cancelled,
                post, token] {
    tpu::KernelJobs jobs(*h, store);
    auto is_cancelled = [cancelled] { return cancelled->load(); };
    auto on_progress = [post, this, token](const json& event) {
      const std::string stage = event.value("stage", event.value("status", std::string()));
      post([this, token, stage] { progress_.report(token, stage); });
    };
    tpu::JobResult r = kind == "test" ? jobs.test(request, true, is_cancelled, on_progress)
                                      : jobs.profile(request, is_cancelled, on_progress);
    // Of several hosts, the one that ran it; a cache hit names them all.
    const std::string host_name = r.host.empty() ? h->name() : r.host;
    KernelResult result =
        kind == "test" ? describe_test(r, host_name) : describe_profile(r, host_name);
    result.kind = pending.kind;
    result.kernel_name = pending.kernel_name;
    result.site_hash = pending.site_hash;
    result.version = pending.version;
    post([this, job_id, uri, result] { finish(job_id, uri, result); });
  });
  return {{"status", "started"}, {"job", job_id}, {"progressToken", json::parse(token)}};
}

void KernelRuns::finish(const std::string& job_id, const std::string& uri, KernelResult result) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) {
    progress_.end(it->second.progress, result.message.substr(0, 120));
    jobs_.erase(it);
  }
  results_[uri][result.kind + ":" + result.kernel_name] = std::move(result);
  context_.refresh(uri);
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
  std::string reason;
  auto task = task_for(doc, reason);
  if (!task) return;  // nothing to lower against: the static checks still run
  std::string error;
  tpu::HostPool* h = host(error);
  if (!h || !h->all_local()) return;  // on-save lowering stays local
  lowering_[uri] = false;
  tpu::KernelRequest request;
  request.file = *path_of_uri(uri);
  request.source = doc.text.text();
  request.task = *task;
  request.options["target"] = "tpu";
  const int64_t version = doc.text.version();
  auto post = context_.post;
  pool_.submit([this, h, request, uri, version, post] {
    tpu::KernelJobs jobs(*h, nullptr);
    tpu::JobResult r = jobs.lower(request);
    post([this, r, uri, version] {
      KernelResult result;
      result.kind = "lower";
      result.version = version;
      const json& b = r.reply.body;
      if (r.reply.ok() || r.reply.status == tpu::WorkerReply::Status::Failed) {
        if (!b.value("ok", false)) {
          const json& e = b.value("error", json::object());
          for (const json& loc : e.value("locations", json::array())) {
            const int line = std::max(1, loc.value("line", 1)) - 1;
            result.extra_diagnostics.push_back(
                {{"range",
                  {{"start", {{"line", line}, {"character", 0}}},
                   {"end", {{"line", line}, {"character", 1000}}}}},
                 {"severity", 1},
                 {"code", "MK100"},
                 {"source", "maxkernel (lower)"},
                 {"message", "lowering for TPU failed (" + e.value("kind", std::string("error")) +
                                 "): " + e.value("message", std::string())}});
            break;  // the deepest frame in the user's file is first
          }
        }
      } else {
        spdlog::warn("on-save lowering of {} did not run: {}", uri, r.reply.message);
      }
      if (b.contains("pallas_calls")) lowered_[uri] = {version, b["pallas_calls"]};
      results_[uri]["lower:"] = std::move(result);
      const bool again = lowering_[uri];
      lowering_.erase(uri);
      context_.refresh(uri);
      if (OpenDocument* d = again ? context_.find_document(uri) : nullptr) on_save(*d);
    });
  });
}

bool KernelRuns::cancel_by_progress_token(const std::string& token) {
  for (auto& [id, job] : jobs_) {
    if (job.progress == token) {
      job.cancelled->store(true);
      return true;
    }
  }
  return false;
}

bool KernelRuns::cancel_job(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  it->second.cancelled->store(true);
  return true;
}

void KernelRuns::cancel_all() {
  for (auto& [id, job] : jobs_) job.cancelled->store(true);
}

json KernelRuns::diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis& a) const {
  json out = json::array();
  auto it = results_.find(doc.text.uri());
  if (it == results_.end()) return out;
  for (const auto& [key, r] : it->second) {
    for (json d : r.extra_diagnostics) {
      if (r.version != doc.text.version()) {
        d["severity"] = 4;
        d["message"] = "[stale: from version " + std::to_string(r.version) + "] " +
                       d["message"].get<std::string>();
      }
      out.push_back(std::move(d));
    }
    if (r.message.empty()) continue;
    const pallas::Kernel* k = a.model.kernel_named(r.kernel_name);
    if (!k) continue;
    const bool stale = kernel_site_hash(doc, *k) != r.site_hash;
    out.push_back(
        {{"range", to_range(doc.text, k->call_span)},
         {"severity", stale ? 4 : r.severity},
         {"code", r.kind == "test" ? "MK200" : "MK201"},
         {"source", "maxkernel (" + r.kind + ")"},
         {"message", (stale ? "[stale: the kernel changed since this run] " : "") + r.message}});
  }
  return out;
}

std::string KernelRuns::hover_addendum(OpenDocument& doc, const pallas::Kernel& kernel,
                                       const knowledge::TpuGeneration& target) const {
  auto it = lowered_.find(doc.text.uri());
  if (it == lowered_.end()) return "";
  const auto& [version, calls] = it->second;
  // The worker names each pallas_call by the line of its call; match it to this kernel.
  const uint32_t line = doc.text.position_of(kernel.call_span.start).line + 1;
  const json* call = nullptr;
  for (const json& c : calls) {
    if (c.value("location", json::object()).value("line", 0) == static_cast<int>(line)) call = &c;
  }
  if (!call && calls.size() == 1 && doc.analysis && doc.analysis->model.kernels.size() == 1)
    call = &calls[0];
  if (!call) return "";
  std::string md = "\n---\n**Lowered for TPU** (exact, from the last save";
  md += version == doc.text.version() ? ")" : "; stale: the document changed since)";
  md += "\n\n- grid `" + call->value("grid", json::array()).dump() + "`";
  if (call->contains("vmem_bytes_per_step") && (*call)["vmem_bytes_per_step"].is_number()) {
    const auto vmem = (*call)["vmem_bytes_per_step"].get<int64_t>();
    md += ", VMEM per step " + analysis::format_bytes(vmem);
    if (auto limit = target.scoped_vmem_limit())
      md += " of " + analysis::format_bytes(*limit) + " on " + target.name;
  }
  md += "\n";
  for (const json& op : call->value("operands", json::array())) {
    md += "- " + op.value("role", std::string()) + " block `" +
          op.value("block_shape", json()).dump() + "` of `" +
          op.value("array_shape", json()).dump() + "` " + op.value("dtype", std::string()) + "\n";
  }
  const json predictions = tpu::predict_pallas_calls(json::array({*call}), target);
  if (!predictions.empty() && predictions[0].contains("predicted_s")) {
    const json& p = predictions[0];
    char buf[200];
    std::snprintf(buf, sizeof buf, "- %.3g FLOP/byte (ridge %.3g on %s): %s-bound; %s %s\n",
                  p["arithmetic_intensity"].get<double>(), p["ridge_intensity"].get<double>(),
                  target.name.c_str(), p["bound"].get<std::string>().c_str(),
                  analysis::format_seconds(p["predicted_s"].get<double>()).c_str(),
                  p["label"].get<std::string>().c_str());
    md += buf;
  }
  return md;
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
    out.push_back({{"position", to_range(doc.text, k->call_span)["end"]},
                   {"label", r.hint + (stale ? " (stale)" : "")},
                   {"kind", 1},
                   {"paddingLeft", true},
                   {"tooltip", r.message}});
  }
  return out;
}

}  // namespace mk::server
