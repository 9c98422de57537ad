// Kernel runs started from the editor: on-save lowering (diagnostics on the lines the worker
// names) and the Test / Profile lenses (background jobs with cancellable progress, results as
// diagnostics and inlay hints, marked stale once the kernel's text changes). Main-loop owned;
// the host work itself runs on the background pool and reports back through `post`.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lsp/server/background.h"
#include "lsp/server/document_store.h"
#include "lsp/server/feature.h"
#include "lsp/server/host_settings.h"
#include "lsp/server/progress.h"
#include "lsp/server/server_port.h"
#include "service/finding.h"
#include "service/kernel_checks.h"
#include "service/workspace.h"

namespace mk::server {

// What a finished run says about one kernel, kept until the next run of the same kind.
struct KernelResult {
  std::string kind;  // "test", "profile", "lower"
  std::string kernel_name;
  std::string site_hash;  // hash of the kernel's pallas_call text when the run started
  int64_t version = 0;
  service::Finding verdict;                     // on the kernel's pallas_call (no message: none)
  std::string hint;                             // inlay hint label ("" for none)
  std::vector<service::Finding> line_findings;  // lowering errors on other lines
  std::optional<service::KernelDiagnosis> diagnosis;  // profile: what limits the kernel
  std::string origin;                                 // "Profile on local" (the hover says it)
};

class KernelRuns : public Feature {
 public:
  KernelRuns(ServerPort& server, service::Workspace& workspace, ProgressTracker& progress);
  ~KernelRuns();

  void configure(const HostSettings& settings);
  // Starts a Test or Profile run of kernel `index` of the document (a profile is diagnosed for
  // `target`); returns the progress token or throws RpcError when it cannot start.
  nlohmann::json start(const std::string& kind, OpenDocument& doc, size_t kernel_index,
                       const nlohmann::json* work_done_token,
                       const knowledge::TpuGeneration& target);
  void on_save(OpenDocument& doc);
  bool cancel_job(const std::string& job_id);
  void cancel_all();

  // Diagnostics and inlay hints from finished runs, for the document's current text.
  nlohmann::json diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis& a) const;
  nlohmann::json inlay_hints(OpenDocument& doc, const analysis::DocumentAnalysis& a) const;
  // Markdown with the exact facts of the last on-save lowering for this kernel, the time
  // model's prediction for the target generation, and the last profile's diagnosis ("" when
  // there is none).
  std::string hover_addendum(OpenDocument& doc, const pallas::Kernel& kernel,
                             const knowledge::TpuGeneration& target) const;
  // Feature: the runs' diagnostics, inlay hints and hover facts.
  void add_diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis& a,
                       nlohmann::json& out) const override {
    append_all(out, diagnostics(doc, a));
  }
  void add_inlay_hints(OpenDocument& doc, const analysis::DocumentAnalysis& a,
                       nlohmann::json& out) const override {
    append_all(out, inlay_hints(doc, a));
  }
  void add_hover(OpenDocument& doc, const pallas::Kernel& kernel,
                 const knowledge::TpuGeneration& target, std::string& markdown) const override {
    markdown += hover_addendum(doc, kernel, target);
  }
  const char* status_name() const override { return "kernel"; }
  size_t running() const override { return workspace_.jobs().count(kJobGroup); }
  // The workspace's warm hosts for the current settings, shared with other background jobs (the
  // kernel writer, step-by-step sessions): the pool outlives a settings change until its last
  // job ends. Main loop only.
  std::shared_ptr<tpu::HostPool> shared_host(std::string& error);
  static constexpr const char* kJobGroup = "kernel";  // this class's jobs in the job table

 private:
  // The worker request for the document's text (service::kernel_request); nullopt + reason when
  // it is no file:// document or belongs to no task.
  std::optional<tpu::KernelRequest> request_for(OpenDocument& doc, const nlohmann::json& options,
                                                std::string& reason) const;
  std::string lowered_addendum(OpenDocument& doc, const pallas::Kernel& kernel,
                               const knowledge::TpuGeneration& target) const;
  std::string diagnosis_addendum(OpenDocument& doc, const pallas::Kernel& kernel) const;
  void finish(const std::string& job_id, const std::string& uri, KernelResult result);

  ServerPort& server_;
  service::Workspace& workspace_;
  ProgressTracker& progress_;
  HostSettings settings_;
  std::map<std::string, std::map<std::string, KernelResult>>
      results_;                           // uri -> "kind:kernel" -> result
  std::map<std::string, bool> lowering_;  // uri -> a newer save arrived while lowering
  std::map<std::string, std::pair<int64_t, std::vector<service::LoweredCall>>>
      lowered_;  // uri -> (version, the lowered pallas_calls)

  int next_job_ = 1;
  BackgroundPool pool_{2};  // last: destroyed first, so running jobs finish before hosts go
};

// A short hash of the kernel's pallas_call text, to tell whether a result is stale.
std::string kernel_site_hash(const OpenDocument& doc, const pallas::Kernel& kernel);

}  // namespace mk::server
