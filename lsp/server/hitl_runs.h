// "Optimize step by step" in the editor: the LSP side of HITL sessions. Opens and resumes
// sessions (agents/orchestration/hitl_session + session_store), runs each phase's work on a
// background pool, and asks the user after every phase with window/showMessageRequest; the
// session advances when the answer arrives (never blocking the main loop). Edits go out as
// versioned workspace/applyEdit with a needsConfirmation change annotation. Main-loop owned.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "agents/orchestration/hitl_session.h"
#include "lsp/protocol/outgoing_requests.h"
#include "lsp/server/background.h"
#include "lsp/server/capabilities.h"
#include "lsp/server/document_store.h"
#include "lsp/server/feature.h"
#include "lsp/server/host_settings.h"
#include "lsp/server/progress.h"
#include "lsp/server/server_port.h"
#include "service/hitl_phases.h"
#include "service/workspace.h"

namespace mk::server {

using service::HitlHostJob;
using service::HitlPhaseOutcome;

class HitlRuns : public Feature {
 public:
  HitlRuns(ServerPort& server, service::Workspace& workspace, rpc::OutgoingRequests& outgoing,
           const ClientCapabilities& client, ProgressTracker& progress);
  ~HitlRuns();

  // A fixed proposer for every session (tests). Unset, each plan/implement phase builds one from
  // ServerPort::llm: the LLM planner/implementer when maxkernel.llm names one, else RuleProposer.
  void set_proposer(std::shared_ptr<agents::Proposer> proposer) { proposer_ = std::move(proposer); }
  // executeCommand maxkernel.optimizeStepByStep: {uri, kernel} opens a session, {session, uri}
  // resumes one (re-asking its pending question). Throws RpcError on bad arguments.
  nlohmann::json start(const nlohmann::json& args);
  // maxkernel/sessions: {"sessions": [{id, kernel, status, phase, uri, run}]}
  nlohmann::json sessions();
  // MK310 (lowering errors) and MK311 (test verdict) of the sessions on this document.
  nlohmann::json diagnostics(const OpenDocument& doc) const;
  // A phase's host work is a job in the workspace's table (keyed by session id): cancelled by
  // its $/progress token there, the session then asks what to do next.
  void cancel_all() { cancelled_->store(true); }
  size_t running() const override;  // phases working on a host
  const char* status_name() const override { return "stepByStep"; }
  void add_diagnostics(OpenDocument& doc, const analysis::DocumentAnalysis&,
                       nlohmann::json& out) const override {
    append_all(out, diagnostics(doc));
  }
  static constexpr const char* kJobGroup = "hitl";

 private:
  agents::SessionStore& store();
  agents::RunStore* run_store();
  std::optional<agents::SessionRecord> load(const std::string& id);
  void save(const agents::SessionRecord& session);
  std::filesystem::path plan_path(const std::string& id);
  std::filesystem::path fix_path(const std::string& id);  // the debugger's fix, beside plan.md
  // Whether "Debug this" can be offered: a fixed proposer that debugs, else an LLM setting.
  bool debugger_available() const;

  void run_phase(agents::SessionRecord session);
  // The test phase's debugger on the latest report, and applying the (user-edited) fix file.
  void run_debug(agents::SessionRecord session);
  void run_fix(agents::SessionRecord session);
  // Builds the proposer of one phase; runs on the pool (a replay client starts a process).
  std::function<std::shared_ptr<agents::Proposer>()> proposer_factory();
  void record_llm_cost(agents::SessionRecord& session, const HitlPhaseOutcome& outcome);
  void finish_phase(const std::string& id, agents::HitlPhase phase, HitlPhaseOutcome outcome);
  void send_edit(agents::SessionRecord& session, const std::string& label);
  void on_edit_answer(const std::string& id, const std::string& label, const nlohmann::json* result,
                      const rpc::Error* error);
  void ask(const std::string& id);
  void on_answer(const std::string& id, int serial, const nlohmann::json* result,
                 const rpc::Error* error);
  void finished(const agents::SessionRecord& session);
  std::shared_ptr<tpu::HostPool> host(std::string& error);

  ServerPort& server_;
  service::Workspace& workspace_;
  rpc::OutgoingRequests& outgoing_;
  const ClientCapabilities& client_;
  ProgressTracker& progress_;
  std::shared_ptr<agents::Proposer> proposer_;  // null: per phase, from ServerPort::llm
  std::map<std::string, int> question_serial_;  // session -> the question whose answer counts
  std::map<std::string, std::pair<int64_t, std::vector<service::Finding>>>
      diagnostics_;  // uri -> (document version, the phase's findings)
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  BackgroundPool pool_{1};  // last: destroyed first, so running work ends before the hosts go
};

}  // namespace mk::server
