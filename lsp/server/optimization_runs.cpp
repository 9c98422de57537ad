#include "lsp/server/optimization_runs.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <fstream>

#include "agents/orchestration/candidate_evaluator.h"
#include "agents/orchestration/expander_factory.h"
#include "agents/orchestration/graph_search.h"
#include "agents/orchestration/selection.h"
#include "agents/report/report_html.h"
#include "lsp/protocol/json_rpc.h"
#include "lsp/server/lsp_convert.h"
#include "lsp/server/uri.h"
#include "service/budget_defaults.h"
#include "service/searches.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::server {

using nlohmann::json;
namespace ec = rpc::error_code;

namespace {

// Store errors name the store and its file already; anything else gets that context here.
std::string store_error_text(const std::exception& e) {
  const std::string what = e.what();
  return what.find("store") != std::string::npos ? what : "the run store: " + what;
}

constexpr const char* kDiagnosticCode = "MK300";
constexpr const char* kBestVariantAnnotation = "maxkernel.bestVariant";

std::string speedup_text(double speedup) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", speedup);
  return buf;
}

std::string mode_title(const std::string& mode, const std::string& strategy) {
  return mode == "auto" ? "Auto" : "Graph search (" + strategy + ")";
}

// The MK300 text for a finished run: the best variant, the baseline's failure, or why nothing won.
OptimizationResult summarise(const agents::RunRecord& run,
                             const std::vector<agents::NodeRecord>& nodes) {
  OptimizationResult r;
  r.run_id = run.id;
  r.mode = run.mode;
  r.status = to_string(run.status);
  r.score_kind = run.score_kind;
  const std::string title = mode_title(run.mode, run.strategy);
  const int evaluations = run.cost.evaluations;
  const std::string after =
      " after " + std::to_string(evaluations) + " evaluation" + (evaluations == 1 ? "" : "s");
  const std::string cancelled =
      run.status == agents::RunStatus::cancelled
          ? " [cancelled; resumable: maxkernel runs resume " + run.id + "]"
          : "";
  const agents::NodeRecord* root = nodes.empty() ? nullptr : &nodes.front();
  if (root && root->status != agents::NodeStatus::correct &&
      root->status != agents::NodeStatus::pending &&
      root->status != agents::NodeStatus::evaluating) {
    r.message = title + ": the baseline failed: " + root->error;
    return r;
  }
  const agents::NodeRecord* best = agents::best_node(nodes);
  if (best && best->id != 0 && best->speedup && *best->speedup > 1.0) {
    r.best_speedup = best->speedup;
    r.best_node = best->id;
    r.message = title + ": best " + speedup_text(*best->speedup) + " " + run.score_kind + after +
                " \u2014 node " + std::to_string(best->id) + ": " + best->description + cancelled;
    return r;
  }
  r.message = title + ": no variant beat the baseline" + after;
  if (!run.stop_reason.empty() && run.status != agents::RunStatus::cancelled)
    r.message += " (" + run.stop_reason + ")";
  if (run.status == agents::RunStatus::failed && !run.stop_reason.empty())
    r.message = title + ": the run failed: " + run.stop_reason;
  r.message += cancelled;
  return r;
}

// The results of the document's kernels that are still in it, each with its kernel.
using ResultsByUri = std::map<std::string, std::map<std::string, OptimizationResult>>;
std::vector<std::pair<const OptimizationResult*, const pallas::Kernel*>> shown_results(
    const ResultsByUri& results, const std::string& uri, const analysis::DocumentAnalysis& a) {
  std::vector<std::pair<const OptimizationResult*, const pallas::Kernel*>> out;
  auto it = results.find(uri);
  if (it == results.end()) return out;
  for (const auto& [name, r] : it->second)
    if (const pallas::Kernel* k = a.model.kernel_named(name)) out.emplace_back(&r, k);
  return out;
}

}  // namespace

agents::ExpanderSetup editor_llm_setup(const std::string& llm_spec,
                                       const std::optional<std::string>& api_key) {
  agents::ExpanderSetup setup;
  setup.llm_spec = llm_spec;
  setup.llm_settings.api_key = api_key;
  setup.llm_settings.replay_python = "python3";  // the replay server needs only the stdlib
  return setup;
}

agents::Budget editor_budget(const std::string& mode, const json& settings) {
  agents::Budget b = service::default_budget(service::BudgetFront::Editor, mode);
  if (!settings.is_object()) return b;
  auto number = [&](const char* key, bool integer) -> std::optional<double> {
    if (!settings.contains(key) || settings[key].is_null()) return std::nullopt;
    const json& v = settings[key];
    if (!v.is_number() || v.get<double>() < 0 || (integer && !v.is_number_integer()))
      throw std::invalid_argument(std::string("maxkernel.budget.") + key + " must be a " +
                                  (integer ? "non-negative integer" : "non-negative number"));
    return v.get<double>();
  };
  if (auto v = number("maxIterations", true)) b.iterations = static_cast<int>(*v);
  if (auto v = number("maxEvaluations", true)) b.evaluations = static_cast<int>(*v);
  if (auto v = number("patience", true)) b.patience = static_cast<int>(*v);
  if (auto v = number("maxWallSeconds", false)) b.seconds = *v;
  if (auto v = number("maxCostUsd", false)) b.usd = *v;
  if (auto v = number("targetSpeedup", false)) b.target_speedup = *v;
  return b;
}

OptimizationRuns::OptimizationRuns(ServerPort& server, service::Workspace& workspace,
                                   ProgressTracker& progress)
    : server_(server), workspace_(workspace), progress_(progress) {}

OptimizationRuns::~OptimizationRuns() {
  shutdown();
}

bool OptimizationRuns::handles(const std::string& command) {
  return command == "maxkernel.optimizeAuto" || command == "maxkernel.graphSearch" ||
         command == "maxkernel.cancelJob" || command == "maxkernel.openReport" ||
         command == "maxkernel.applyBestVariant";
}

agents::RunStore& OptimizationRuns::run_store() {
  return *workspace_.runs();  // throws with the path and reason
}

void OptimizationRuns::execute(const std::string& command, const rpc::ParamReader& params,
                               rpc::Reply reply, const OptimizationSettings& settings) {
  const json* args = params.optional_raw("arguments");
  const bool has_arg = args && args->is_array() && !args->empty() && (*args)[0].is_object();
  static const json empty = json::object();
  const rpc::ParamReader arg(has_arg ? (*args)[0] : empty, "params.arguments[0]");
  if (command == "maxkernel.cancelJob") {
    // {job} as reported at start; a palette call may carry only the kernel's {uri}: then the
    // document's newest Auto / graph job.
    std::string job = arg.optional_string("job").value_or("");
    if (job.empty() && arg.optional_string("uri")) {
      int newest = 0;
      for (const service::Job* j : workspace_.jobs().jobs(kJobGroup)) {
        const int number = std::stoi(j->id.substr(4));  // "opt-N"
        if (j->uri == *arg.optional_string("uri") && number > newest) {
          newest = number;
          job = j->id;
        }
      }
      if (job.empty()) arg.fail("job", "no running Auto or graph search job for this document");
    }
    if (job.empty()) job = arg.string("job");  // names the missing field
    if (const service::Job* j = workspace_.jobs().find(job); j && j->group == kJobGroup) {
      workspace_.jobs().cancel(job);
      return reply.result({{"status", "cancelling"}, {"job", job}});
    }
    if (server_.cancel_kernel_job(job))
      return reply.result({{"status", "cancelling"}, {"job", job}});
    throw rpc::RpcError(ec::kInvalidParams,
                        "params.arguments[0].job: no running job '" + job + "'");
  }
  if (command == "maxkernel.openReport")
    return reply.result(open_report(arg.optional_string("uri").value_or(""),
                                    arg.optional_string("run").value_or("")));
  if (command == "maxkernel.applyBestVariant")
    return apply_best_variant(arg.string("uri"), arg.optional_string("run").value_or(""), reply);
  if (!has_arg) params.fail("arguments", "expected [{uri, kernel}]");
  const bool graph = command == "maxkernel.graphSearch";
  const std::string strategy = graph ? arg.optional_string("strategy").value_or("beam") : "greedy";
  if (graph && strategy != "beam" && strategy != "parallel" && strategy != "ucb")
    arg.fail("strategy", "expected beam, parallel or ucb, got '" + strategy + "'");
  reply.result(start(graph ? "graph" : "auto", strategy, arg, settings,
                     params.optional_raw("workDoneToken")));
}

json OptimizationRuns::start(const std::string& mode, const std::string& strategy,
                             const rpc::ParamReader& arg, const OptimizationSettings& settings,
                             const json* work_done_token) {
  const std::string uri = arg.string("uri");
  OpenDocument* doc = server_.find_document(uri);
  if (!doc) arg.fail("uri", "document is not open");
  const knowledge::TpuGeneration* target = knowledge::find_tpu_generation(settings.target);
  if (!target) throw rpc::RpcError(ec::kRequestFailed, "unknown TPU generation " + settings.target);
  const auto& analysis = doc->analyse(*target);
  const int64_t index = arg.optional_integer("kernel").value_or(0);
  if (index < 0 || static_cast<size_t>(index) >= analysis.model.kernels.size())
    arg.fail("kernel", "no such kernel in the document");
  const pallas::Kernel& kernel = analysis.model.kernels[static_cast<size_t>(index)];
  const auto path = path_of_uri(uri);
  if (!path) throw rpc::RpcError(ec::kRequestFailed, "only file:// documents can be optimized");
  std::string reason;
  auto task = tpu::locate_task(*path, analysis.model.task.form() == "infile", reason);
  if (!task) throw rpc::RpcError(ec::kRequestFailed, reason);
  agents::Budget budget;
  try {
    budget = editor_budget(mode, settings.budget);
  } catch (const std::invalid_argument& e) {
    throw rpc::RpcError(ec::kInvalidParams, e.what());
  }
  agents::SearchParams search_params;
  search_params.strategy = strategy;
  search_params.autotune_configs = settings.autotune_configs;
  if (mode == "auto") {
    search_params.max_depth = 16;  // a greedy chain goes deep; the budget stops it
  } else {
    search_params.beam_size = 2;
    search_params.branches = 2;
  }
  agents::RunStore* store = nullptr;
  try {
    store = &run_store();
  } catch (const std::exception& e) {
    throw rpc::RpcError(ec::kRequestFailed, store_error_text(e));
  }
  service::NewSearch search;
  search.mode = mode;
  search.params = search_params;
  search.budget = budget;
  search.file = *path;
  search.target = target->name;
  search.host = settings.host.default_host;
  search.llm = settings.llm_spec;
  search.task = *task;
  const std::string run_id = service::create_search(*store, search);

  const std::string job_id = "opt-" + std::to_string(next_job_++);
  const std::string token = progress_.begin(
      "MaxKernel: " + mode_title(mode, strategy) + " " + kernel.name, work_done_token);
  progress_.report(token, "run " + run_id + " on " + settings.host.default_host);
  auto cancelled = workspace_.jobs().add(job_id, kJobGroup, token, uri);
  latest_run_[uri] = run_id;

  OptimizationResult pending;
  pending.kernel_name = kernel.name;
  pending.site_hash = kernel_site_hash(*doc, kernel);
  pending.version = doc->text.version();
  {
    std::lock_guard lock(activity_->mutex);
    ++activity_->running;
  }
  // The cache lives in the same file; without it searches still run, only uncached.
  std::shared_ptr<agents::RunStore> store_keep = workspace_.runs();
  std::shared_ptr<knowledge::Store> cache = workspace_.cache();
  std::string choice_error;
  std::optional<service::HostChoice> choice = host_choice_of(settings.host, choice_error);
  pool_.submit([this, store_keep, cache, settings, run_id, job_id, uri, token, pending,
                baseline = doc->text.text(), cancelled, activity = activity_,
                choice = std::move(choice), error = choice_error,
                &workspace = workspace_]() mutable {
    OptimizationResult result;
    // Its own pool: cancelling or ending the run stops its workers.
    std::shared_ptr<tpu::HostPool> host = choice ? workspace.own_hosts(*choice, error) : nullptr;
    if (host) {
      for (const std::string& aside : host->set_aside()) {
        const std::string message = "set aside host " + aside + "; the others do the work";
        server_.post([this, token, message] { progress_.report(token, message); });
      }
    }
    agents::RunRecord final_run;
    final_run.id = run_id;
    if (auto recorded = store_keep->run(run_id)) final_run = *recorded;
    if (!host) {
      final_run.status = agents::RunStatus::failed;
      final_run.stop_reason = "no host: " + error;
      store_keep->update_run(final_run);
    } else {
      service::SearchSetup setup;
      setup.llm = editor_llm_setup(settings.llm_spec, settings.api_key);
      auto on_progress = [this, token](const agents::SearchProgress& p) {
        std::string message = "iteration " + std::to_string(p.round);
        if (p.max_rounds > 0) message += "/" + std::to_string(p.max_rounds);
        message += ", best " + speedup_text(p.best_speedup) + " " + p.score_label;
        if (!p.message.empty()) message += " \u2014 " + p.message;
        std::optional<int> percent;
        if (p.max_rounds > 0) percent = std::min(100, p.round * 100 / p.max_rounds);
        server_.post(
            [this, token, message, percent] { progress_.report(token, message, percent); });
      };
      try {
        final_run = service::drive_search(*store_keep, *host, cache.get(), run_id, baseline,
                                          std::move(setup), on_progress,
                                          [cancelled] { return cancelled->load(); })
                        .run;
      } catch (const std::exception& e) {  // the store or a worker reply: the run failed
        final_run.status = agents::RunStatus::failed;
        final_run.stop_reason = e.what();
        try {
          store_keep->update_run(final_run);
        } catch (const std::exception& again) {  // e.g. the disk is still full
          spdlog::error("run {}: cannot record its failure: {}", run_id, again.what());
        }
      }
      host->shutdown();  // no worker outlives its run
    }
    try {
      const std::vector<agents::NodeRecord> nodes = store_keep->nodes(run_id);
      result = summarise(final_run, nodes);
      if (const auto* generation = knowledge::find_tpu_generation(settings.target)) {
        if (!nodes.empty()) result.diagnosis = service::node_diagnosis(nodes.front(), *generation);
        for (const agents::NodeRecord& n : nodes)
          if (result.best_node && n.id == *result.best_node)
            result.best_diagnosis = service::node_diagnosis(n, *generation);
      }
    } catch (const std::exception& e) {
      result.run_id = run_id;
      result.status = "failed";
      result.message = store_error_text(e);
    }
    result.kernel_name = pending.kernel_name;
    result.site_hash = pending.site_hash;
    result.version = pending.version;
    server_.post([this, job_id, uri, result] { finish(job_id, uri, result); });
    std::lock_guard lock(activity->mutex);
    --activity->running;
    activity->idle.notify_all();
  });
  return {{"status", "started"},
          {"job", job_id},
          {"run", run_id},
          {"progressToken", json::parse(token)}};
}

void OptimizationRuns::finish(const std::string& job_id, const std::string& uri,
                              OptimizationResult result) {
  if (const std::optional<service::Job> job = workspace_.jobs().remove(job_id))
    progress_.end(job->progress, result.message);
  spdlog::info("run {} {}: {}", result.run_id, result.status, result.message);
  results_[uri][result.kernel_name] = std::move(result);
  server_.refresh_after_run(uri);
}

void OptimizationRuns::cancel_all() {
  workspace_.jobs().cancel_group(kJobGroup);
}

void OptimizationRuns::shutdown(std::chrono::milliseconds wait) {
  cancel_all();
  std::unique_lock lock(activity_->mutex);
  if (!activity_->idle.wait_for(lock, wait, [&] { return activity_->running == 0; }))
    spdlog::warn("{} optimization run(s) still stopping at exit", activity_->running);
}

const OptimizationResult* OptimizationRuns::result_for_run(const std::string& uri,
                                                           const std::string& run_id) const {
  auto it = results_.find(uri);
  if (it == results_.end()) return nullptr;
  for (const auto& [kernel, r] : it->second) {
    if (r.run_id == run_id ||
        (run_id.empty() && latest_run_.count(uri) && latest_run_.at(uri) == r.run_id))
      return &r;
  }
  return nullptr;
}

void OptimizationRuns::apply_best_variant(const std::string& uri, const std::string& run_id,
                                          rpc::Reply reply) {
  OpenDocument* doc = server_.find_document(uri);
  if (!doc)
    throw rpc::RpcError(ec::kInvalidParams, "params.arguments[0].uri: document is not open");
  const OptimizationResult* r = result_for_run(uri, run_id);
  if (!r)
    throw rpc::RpcError(
        ec::kInvalidParams,
        "no finished run" + (run_id.empty() ? "" : " '" + run_id + "'") + " for " + uri);
  auto refuse = [&](const std::string& why) {
    const std::string message =
        "MaxKernel: the best variant of run " + r->run_id + " was not applied: " + why;
    server_.notify("window/showMessage", {{"type", 2}, {"message", message}});
    reply.result({{"status", "refused"}, {"message", message}});
  };
  if (!r->best_node) return refuse("no variant beat the baseline");
  if (doc->text.version() != r->version)
    return refuse("the document changed since the run started (version " +
                  std::to_string(r->version) + ", now " + std::to_string(doc->text.version()) +
                  "); run it again on the current text");
  if (!client_.apply_edit) return refuse("the editor cannot apply workspace edits");
  std::optional<agents::NodeRecord> node;
  try {
    node = run_store().node(r->run_id, *r->best_node);
  } catch (const std::exception& e) {
    return refuse(store_error_text(e));
  }
  if (!node) return refuse("node " + std::to_string(*r->best_node) + " is not in the run store");
  const std::string label = "Apply best variant (" + speedup_text(*r->best_speedup) + " " +
                            r->score_kind + ", run " + r->run_id + ")";
  const EditAnnotation annotation{kBestVariantAnnotation, label,
                                  "node " + std::to_string(node->id) + ": " + node->description};
  const json workspace_edit = to_workspace_edit(
      {{uri, r->version, false, minimal_edits(doc->text, node->code)}}, client_.document_changes,
      client_.change_annotations ? &annotation : nullptr);
  server_.request("workspace/applyEdit", {{"label", label}, {"edit", workspace_edit}},
                  [reply, run = r->run_id](const json* result, const rpc::Error* error) {
                    if (error)
                      return reply.result({{"status", "failed"}, {"message", error->message}});
                    const bool applied =
                        result && result->is_object() && result->value("applied", false);
                    json answer = {{"status", applied ? "applied" : "rejected"}, {"run", run}};
                    if (result && result->is_object() && result->contains("failureReason"))
                      answer["message"] = (*result)["failureReason"];
                    reply.result(answer);
                  });
}

json OptimizationRuns::open_report(const std::string& uri, const std::string& run_id) {
  std::string id = run_id;
  if (id.empty() && latest_run_.count(uri)) id = latest_run_.at(uri);
  if (id.empty())
    throw rpc::RpcError(ec::kInvalidParams,
                        "params.arguments[0]: give {run} or the {uri} of a document with a run");
  agents::RunStore& store = run_store();
  const auto run = store.run(id);
  if (!run)
    throw rpc::RpcError(ec::kInvalidParams,
                        "no run '" + id + "' in " + workspace_.store_path().string());
  const std::filesystem::path dir = workspace_.store_path().parent_path() / "reports";
  const std::filesystem::path file = dir / (id + ".html");
  std::error_code ec_dir;
  std::filesystem::create_directories(dir, ec_dir);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << report::render_report(*run, store.nodes(id));
  if (!out.flush()) throw rpc::RpcError(ec::kRequestFailed, "cannot write " + file.string());
  if (client_.show_document)
    server_.request("window/showDocument",
                    {{"uri", file_uri(file)}, {"external", false}, {"takeFocus", true}},
                    [](const json*, const rpc::Error*) {});
  return {{"reportPath", file.string()}, {"run", id}};
}

json OptimizationRuns::diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis& a) const {
  json out = json::array();
  for (const auto& [r, k] : shown_results(results_, doc.text.uri(), a)) {
    const bool stale = kernel_site_hash(doc, *k) != r->site_hash;
    service::Finding f;
    f.span = k->call_span;
    f.severity = stale ? service::Severity::Hint : service::Severity::Information;
    f.code = kDiagnosticCode;
    f.message = (stale ? "[stale: the kernel changed since this run] " : "") + r->message;
    f.data = {{"run", r->run_id}, {"uri", doc.text.uri()}};
    out.push_back(to_lsp_diagnostic(doc.text, f));
  }
  return out;
}

json OptimizationRuns::code_lenses(OpenDocument& doc, const analysis::DocumentAnalysis& a) const {
  json out = json::array();
  for (const auto& [r, k] : shown_results(results_, doc.text.uri(), a)) {
    const json argument = {{"uri", doc.text.uri()}, {"run", r->run_id}};
    if (r->best_speedup)
      out.push_back(to_code_lens(doc.text, k->call_span, "Best " + speedup_text(*r->best_speedup),
                                 "maxkernel.applyBestVariant", argument));
    out.push_back(to_code_lens(doc.text, k->call_span, "Report", "maxkernel.openReport", argument));
  }
  return out;
}

json OptimizationRuns::inlay_hints(OpenDocument& doc, const analysis::DocumentAnalysis& a) const {
  json out = json::array();
  for (const auto& [r, k] : shown_results(results_, doc.text.uri(), a)) {
    if (!r->diagnosis) continue;
    const bool stale = kernel_site_hash(doc, *k) != r->site_hash;
    out.push_back(to_diagnosis_hint(doc.text, k->call_span.end, *r->diagnosis, stale));
  }
  return out;
}

std::string OptimizationRuns::hover_addendum(OpenDocument& doc,
                                             const pallas::Kernel& kernel) const {
  auto it = results_.find(doc.text.uri());
  if (it == results_.end()) return "";
  auto found = it->second.find(kernel.name);
  if (found == it->second.end()) return "";
  const OptimizationResult& r = found->second;
  const bool stale = kernel_site_hash(doc, kernel) != r.site_hash;
  std::string md;
  if (r.diagnosis)
    md += diagnosis_markdown(*r.diagnosis, "run " + r.run_id + ", the baseline", stale);
  if (r.best_diagnosis && r.best_node)
    md += diagnosis_markdown(
        *r.best_diagnosis,
        "run " + r.run_id + ", the best variant (node " + std::to_string(*r.best_node) + ")",
        false);
  return md;
}

json OptimizationRuns::code_actions(const std::string& uri, const json& diagnostics) const {
  json out = json::array();
  if (!diagnostics.is_array()) return out;
  for (const json& d : diagnostics) {
    if (!d.is_object() || d.value("code", json()) != kDiagnosticCode) continue;
    const json data = d.value("data", json::object());
    const std::string run_id = data.is_object() ? data.value("run", std::string()) : "";
    const OptimizationResult* r = result_for_run(uri, run_id);
    if (!r || !r->best_speedup) continue;
    out.push_back({{"title", "Apply best variant (" + speedup_text(*r->best_speedup) + ")"},
                   {"kind", "quickfix"},
                   {"isPreferred", true},
                   {"diagnostics", json::array({d})},
                   {"command",
                    {{"title", "Apply best variant"},
                     {"command", "maxkernel.applyBestVariant"},
                     {"arguments", json::array({json{{"uri", uri}, {"run", r->run_id}}})}}}});
  }
  return out;
}

}  // namespace mk::server
