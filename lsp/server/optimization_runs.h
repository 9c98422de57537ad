// Auto and graph-search runs started from the editor: each run is a RunRecord in the run store,
// searched on the background pool with its own kernel host (so cancelling or exiting stops its
// workers), reported through cancellable $/progress, and summarised as an MK300 diagnostic with
// an "Apply best variant" quick fix, code lenses and an HTML report. Main-loop owned, like
// KernelRuns; the search itself reports back through `post`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/orchestration/expander.h"
#include "agents/orchestration/expander_factory.h"
#include "agents/orchestration/search_params.h"
#include "lsp/protocol/dispatcher.h"
#include "lsp/server/background.h"
#include "lsp/server/capabilities.h"
#include "lsp/server/document_store.h"
#include "lsp/server/feature.h"
#include "lsp/server/kernel_runs.h"
#include "lsp/server/progress.h"
#include "lsp/server/server_port.h"
#include "service/kernel_diagnosis.h"
#include "service/workspace.h"

namespace mk::server {

// What the editor keeps of a finished (or cancelled, or failed) run of one kernel.
struct OptimizationResult {
  std::string run_id, mode, kernel_name;
  std::string site_hash;               // the kernel's pallas_call text when the run started
  int64_t version = 0;                 // the document version the run started from
  std::string status;                  // the run's status: done | stopped | failed | cancelled
  std::string message;                 // the MK300 text
  std::optional<double> best_speedup;  // set when a variant beat the baseline
  std::optional<int64_t> best_node;
  std::string score_kind;
  // What limits the kernel the run started from (the baseline node, as in the document), and
  // the best variant's when one beat it.
  std::optional<service::KernelDiagnosis> diagnosis, best_diagnosis;
};

// What a run needs from the server's settings at the moment it starts.
struct OptimizationSettings {
  HostSettings host;
  nlohmann::json budget = nlohmann::json::object();  // maxkernel.budget
  std::string target = "v5e";
  std::string llm_spec = "none";       // from maxkernel.llm (settings.h llm_spec_of)
  std::optional<std::string> api_key;  // from the editor's secret store; memory only
  int autotune_configs = -1;           // maxkernel.autotuneConfigs (-1: automatic)
};

class OptimizationRuns : public Feature {
 public:
  OptimizationRuns(ServerPort& server, service::Workspace& workspace, ProgressTracker& progress);
  ~OptimizationRuns();  // cancels running searches and waits for them

  void set_client(const ClientCapabilities& client) { client_ = client; }
  // True for the commands this class answers (optimizeAuto, graphSearch, cancelJob, openReport,
  // applyBestVariant); then `execute` answers `reply` (now or once the client answered).
  static bool handles(const std::string& command);
  void execute(const std::string& command, const rpc::ParamReader& params, rpc::Reply reply,
               const OptimizationSettings& settings);

  const char* status_name() const override { return "optimization"; }
  size_t running() const override { return workspace_.jobs().count(kJobGroup); }
  static constexpr const char* kJobGroup = "optimize";  // this class's jobs in the job table
  void cancel_all();
  // Cancels every running search and waits (bounded) until their workers are gone.
  void shutdown(std::chrono::milliseconds wait = std::chrono::seconds(20));

  nlohmann::json diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis& a) const;
  nlohmann::json code_lenses(OpenDocument& doc, const analysis::DocumentAnalysis& a) const;
  // The baseline's diagnosis at each kernel with a finished run (stale once its pallas_call
  // changes), and in the hover with the best variant's.
  nlohmann::json inlay_hints(OpenDocument& doc, const analysis::DocumentAnalysis& a) const;
  std::string hover_addendum(OpenDocument& doc, const pallas::Kernel& kernel) const;
  // Quick fixes for the MK300 diagnostics in a codeAction request's context.
  nlohmann::json code_actions(const std::string& uri, const nlohmann::json& diagnostics) const;

  // Feature: the runs' MK300 diagnostics, lenses, hints, hover and quick fixes.
  void add_diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis& a,
                       nlohmann::json& out) const override {
    append_all(out, diagnostics(doc, a));
  }
  void add_code_lenses(OpenDocument& doc, const analysis::DocumentAnalysis& a,
                       nlohmann::json& out) const override {
    append_all(out, code_lenses(doc, a));
  }
  void add_inlay_hints(OpenDocument& doc, const analysis::DocumentAnalysis& a,
                       nlohmann::json& out) const override {
    append_all(out, inlay_hints(doc, a));
  }
  void add_code_actions(OpenDocument& doc, const nlohmann::json& context_diagnostics,
                        nlohmann::json& out) const override {
    append_all(out, code_actions(doc.text.uri(), context_diagnostics));
  }
  void add_hover(OpenDocument& doc, const pallas::Kernel& kernel, const knowledge::TpuGeneration&,
                 std::string& markdown) const override {
    markdown += hover_addendum(doc, kernel);
  }

 private:
  // Counts searches on the pool so shutdown can wait for them; shared with the pool jobs.
  struct Activity {
    std::mutex mutex;
    std::condition_variable idle;
    int running = 0;
  };

  nlohmann::json start(const std::string& mode, const std::string& strategy,
                       const rpc::ParamReader& arg, const OptimizationSettings& settings,
                       const nlohmann::json* work_done_token);
  void apply_best_variant(const std::string& uri, const std::string& run_id, rpc::Reply reply);
  nlohmann::json open_report(const std::string& uri, const std::string& run_id);
  void finish(const std::string& job_id, const std::string& uri, OptimizationResult result);
  agents::RunStore& run_store();
  const OptimizationResult* result_for_run(const std::string& uri, const std::string& run_id) const;

  ServerPort& server_;
  service::Workspace& workspace_;
  ProgressTracker& progress_;
  ClientCapabilities client_;
  std::map<std::string, std::map<std::string, OptimizationResult>> results_;  // uri -> kernel
  std::map<std::string, std::string> latest_run_;                             // uri -> run id
  int next_job_ = 1;
  std::shared_ptr<Activity> activity_ = std::make_shared<Activity>();
  BackgroundPool pool_{2};  // last: destroyed first, so searches end before the store goes
};

// The LLM part of an editor run's setup: the maxkernel.llm spec and the key from the editor's
// secret store (kept in memory only). Auto/graph runs and step-by-step sessions share it.
agents::ExpanderSetup editor_llm_setup(const std::string& llm_spec,
                                       const std::optional<std::string>& api_key);

// The budget of an editor run: the mode's defaults, overridden by maxkernel.budget
// {maxIterations, maxEvaluations, maxWallSeconds, maxCostUsd, targetSpeedup, patience}.
// Throws std::invalid_argument naming the bad key.
agents::Budget editor_budget(const std::string& mode, const nlohmann::json& settings);

}  // namespace mk::server
