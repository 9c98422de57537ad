#include "lsp/server/hitl_runs.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "agents/orchestration/expander.h"
#include "agents/orchestration/expander_factory.h"
#include "lsp/protocol/json_rpc.h"
#include "lsp/server/lsp_convert.h"
#include "lsp/server/optimization_runs.h"
#include "lsp/server/uri.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::server {

using agents::HitlNext;
using agents::SessionRecord;
using nlohmann::json;
namespace ec = rpc::error_code;

namespace {

// A human does not answer within the protocol's usual 30 s: the question waits for a day (the
// session is persisted anyway, and resuming asks again).
constexpr auto kQuestionTimeout = std::chrono::hours(24);
constexpr auto kEditTimeout = std::chrono::hours(24);

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_file(const std::filesystem::path& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

// The task's reference when it lives beside the kernel in its own file (a JAXBench baseline.py,
// a MaxKernel task's reference.py); "" for an in-file task (the reference is in the code).
std::string separate_reference(const std::filesystem::path& file) {
  std::string reason;
  const std::optional<json> task = tpu::locate_task(file, false, reason);
  if (!task) return "";
  const std::string form = task->value("form", std::string());
  if (form == "jaxbench") return read_file(task->value("baseline", std::string()));
  if (form == "maxkernel")
    return read_file(std::filesystem::path(task->value("path", std::string())) / "reference.py");
  return "";
}

// Stands in when the configured LLM cannot be set up (no key, bad spec, no replay fixture):
// every call reports why, so the phase ends with that reason and the session asks again.
class UnavailableProposer : public agents::Proposer {
 public:
  explicit UnavailableProposer(llm::LlmError error) : error_(std::move(error)) {}
  std::string plan(const agents::PlanRequest&) override { throw error_; }
  agents::Implementation implement(const agents::ImplementRequest&) override { throw error_; }
  std::string debug(const agents::DebugRequest&) override { throw error_; }

 private:
  llm::LlmError error_;
};

}  // namespace

HitlRuns::HitlRuns(ServerPort& server, service::Workspace& workspace,
                   rpc::OutgoingRequests& outgoing, const ClientCapabilities& client,
                   ProgressTracker& progress)
    : server_(server),
      workspace_(workspace),
      outgoing_(outgoing),
      client_(client),
      progress_(progress) {}

HitlRuns::~HitlRuns() {
  cancel_all();
}

// ----- persistence --------------------------------------------------------------------------

agents::SessionStore& HitlRuns::store() {
  try {
    return *workspace_.sessions();
  } catch (const std::exception& e) {
    throw rpc::RpcError(ec::kRequestFailed, std::string("MaxKernel sessions: ") + e.what());
  }
}

agents::RunStore* HitlRuns::run_store() {
  try {
    return workspace_.runs().get();
  } catch (const std::exception& e) {
    spdlog::warn("step by step: no run store: {}", e.what());
    return nullptr;
  }
}

std::optional<SessionRecord> HitlRuns::load(const std::string& id) {
  try {
    return store().get(id);
  } catch (const std::exception& e) {
    spdlog::warn("step by step: cannot load session {}: {}", id, e.what());
    return std::nullopt;
  }
}

void HitlRuns::save(const SessionRecord& session) {
  try {
    store().update(session);
  } catch (const std::exception& e) {
    spdlog::warn("step by step: cannot save session {}: {}", session.id, e.what());
  }
}

std::filesystem::path HitlRuns::plan_path(const std::string& id) {
  return store().path().parent_path() / "sessions" / id / "plan.md";
}

std::filesystem::path HitlRuns::fix_path(const std::string& id) {
  return plan_path(id).parent_path() / "fix.py";
}

bool HitlRuns::debugger_available() const {
  if (proposer_) return proposer_->can_debug();
  const std::string spec = server_.llm().spec;
  return !spec.empty() && spec != "none";
}

std::shared_ptr<tpu::HostPool> HitlRuns::host(std::string& error) {
  const std::optional<service::HostChoice> choice = host_choice_of(server_.host_settings(), error);
  return choice ? workspace_.warm_hosts(*choice, error) : nullptr;
}

// ----- commands -----------------------------------------------------------------------------

json HitlRuns::start(const json& args) {
  if (!args.is_object())
    throw rpc::RpcError(ec::kInvalidParams,
                        "params.arguments[0]: expected {uri, kernel} or {session, uri}");
  auto string_arg = [&](const char* key) -> std::string {
    if (!args.contains(key)) return "";
    if (!args[key].is_string())
      throw rpc::RpcError(ec::kInvalidParams,
                          std::string("params.arguments[0].") + key + ": expected a string");
    return args[key].get<std::string>();
  };
  const std::string session_id = string_arg("session");
  const std::string uri = string_arg("uri");

  if (!session_id.empty()) {  // resume
    std::optional<SessionRecord> s = store().get(session_id);
    if (!s)
      throw rpc::RpcError(ec::kInvalidParams,
                          "params.arguments[0].session: no session '" + session_id + "'");
    if (!uri.empty()) s->uri = uri;
    if (!agents::hitl_active(*s))
      return {{"status", to_string(s->status)},
              {"session", s->id},
              {"phase", to_string(s->phase)},
              {"message", "the session has ended (" + to_string(s->status) + ")"}};
    // The document may have been reopened (new version numbers): same text, same candidate.
    if (OpenDocument* doc = server_.find_document(s->uri); doc && doc->text.text() == s->code)
      s->doc_version = doc->text.version();
    agents::hitl_record(*s, "resumed", "");
    save(*s);
    // After this reply: the client sees the command's answer before the question.
    server_.post([this, id = s->id] {
      std::optional<SessionRecord> now = load(id);
      if (!now) return;
      if (now->status == agents::SessionStatus::awaiting)
        ask(id);
      else
        run_phase(*now);  // the server stopped while the phase's work was running: run it again
    });
    return {{"status", "resumed"}, {"session", s->id}, {"phase", to_string(s->phase)}};
  }

  if (uri.empty()) throw rpc::RpcError(ec::kInvalidParams, "params.arguments[0].uri: required");
  OpenDocument* doc = server_.find_document(uri);
  if (!doc)
    throw rpc::RpcError(ec::kInvalidParams, "params.arguments[0].uri: document is not open");
  if (!path_of_uri(uri))
    throw rpc::RpcError(ec::kRequestFailed, "only file:// documents can be optimized");
  const auto& analysis = doc->analyse(server_.target());
  if (analysis.model.kernels.empty())
    throw rpc::RpcError(ec::kRequestFailed, "no Pallas kernel in the document");
  std::string kernel = analysis.model.kernels.front().name;
  if (args.contains("kernel")) {
    const json& k = args["kernel"];
    if (k.is_number_integer()) {
      const int64_t index = k.get<int64_t>();
      if (index < 0 || static_cast<size_t>(index) >= analysis.model.kernels.size())
        throw rpc::RpcError(ec::kInvalidParams,
                            "params.arguments[0].kernel: no such kernel in the document");
      kernel = analysis.model.kernels[static_cast<size_t>(index)].name;
    } else if (k.is_string()) {
      kernel = k.get<std::string>();
      bool known = false;
      for (const auto& candidate : analysis.model.kernels)
        known = known || candidate.name == kernel;
      if (!known)
        throw rpc::RpcError(ec::kInvalidParams,
                            "params.arguments[0].kernel: no kernel named '" + kernel + "'");
    } else {
      throw rpc::RpcError(ec::kInvalidParams,
                          "params.arguments[0].kernel: expected an index or a name");
    }
  }

  SessionRecord s = agents::hitl_begin(uri, kernel, doc->text.version(), doc->text.text());
  if (agents::RunStore* runs = run_store()) {
    try {
      agents::RunRecord run;
      run.mode = "hitl";
      run.strategy = "hitl";
      run.file = path_of_uri(uri)->string();
      run.kernel = kernel;
      run.target = server_.target().name;
      run.host = server_.host_settings().default_host;
      run.llm = server_.llm().spec;
      run.status = agents::RunStatus::running;
      s.run_id = runs->create_run(run);
      agents::NodeRecord root;
      root.run_id = s.run_id;
      root.strategy = "baseline";
      root.description = "the kernel as the session found it";
      root.code = s.code;
      root.code_hash = agents::candidate_hash(s.code);
      root.status = agents::NodeStatus::pending;
      runs->add_node(root);
    } catch (const std::exception& e) {
      spdlog::warn("step by step: run not recorded: {}", e.what());
    }
  }
  s.id = store().create(s);
  spdlog::info("step by step: session {} on {} ({})", s.id, kernel, uri);
  run_phase(s);
  return {
      {"status", "started"}, {"session", s.id}, {"phase", to_string(s.phase)}, {"run", s.run_id}};
}

json HitlRuns::sessions() {
  json out = json::array();
  for (const SessionRecord& s : store().list()) {
    out.push_back({{"id", s.id},
                   {"kernel", s.kernel},
                   {"status", to_string(s.status)},
                   {"phase", to_string(s.phase)},
                   {"uri", s.uri},
                   {"run", s.run_id}});
  }
  return {{"sessions", out}};
}

json HitlRuns::diagnostics(const OpenDocument& doc) const {
  json out = json::array();
  auto it = diagnostics_.find(doc.text.uri());
  if (it == diagnostics_.end() || it->second.first != doc.text.version()) return out;
  for (const service::Finding& f : it->second.second) out.push_back(to_lsp_diagnostic(doc.text, f));
  return out;
}

size_t HitlRuns::running() const {
  return workspace_.jobs().count(kJobGroup);
}

// ----- phases -------------------------------------------------------------------------------

std::function<std::shared_ptr<agents::Proposer>()> HitlRuns::proposer_factory() {
  if (proposer_) return [proposer = proposer_] { return proposer; };
  const LlmChoice choice = server_.llm();
  agents::ExpanderSetup setup = editor_llm_setup(choice.spec, choice.api_key);
  setup.task_summary =
      "Make the kernel faster on the target TPU; its results must stay the same (the task's "
      "reference checks them).";
  const knowledge::TpuGeneration target = server_.target();
  return [setup, target, cancelled = cancelled_]() -> std::shared_ptr<agents::Proposer> {
    try {
      return agents::make_proposer(setup, target, [cancelled] { return cancelled->load(); });
    } catch (const llm::LlmError& e) {
      spdlog::warn("step by step: the LLM {} is not available: {}", setup.llm_spec, e.what());
      return std::make_shared<UnavailableProposer>(e);
    }
  };
}

void HitlRuns::record_llm_cost(SessionRecord& s, const HitlPhaseOutcome& outcome) {
  if (outcome.llm_calls == 0) return;
  char usd[32];
  std::snprintf(usd, sizeof usd, "%.4f", outcome.usage.cost_usd);
  agents::hitl_record(s, "llm",
                      std::to_string(outcome.llm_calls) + " call(s), " +
                          std::to_string(outcome.usage.input_tokens) + " tokens in, " +
                          std::to_string(outcome.usage.output_tokens) + " out, $" + usd);
  agents::RunStore* runs = run_store();
  if (!runs || s.run_id.empty()) return;
  try {
    std::optional<agents::RunRecord> run = runs->run(s.run_id);
    if (!run) return;
    // The same totals an Auto run keeps (graph_search), and the calls.
    run->cost.tokens_in += outcome.usage.input_tokens;
    run->cost.tokens_out += outcome.usage.output_tokens;
    run->cost.usd += outcome.usage.cost_usd;
    run->cost.llm_calls += outcome.llm_calls;
    runs->update_run(*run);
  } catch (const std::exception& e) {
    spdlog::warn("step by step: LLM cost not recorded: {}", e.what());
  }
}

void HitlRuns::run_phase(SessionRecord s) {
  if (s.status != agents::SessionStatus::running) return;
  save(s);
  const std::string id = s.id;
  const agents::HitlPhase phase = s.phase;
  const std::string phase_name = to_string(phase);
  auto cancelled = cancelled_;
  auto done = [this, id, phase](HitlPhaseOutcome outcome) {
    server_.post([this, id, phase, outcome = std::move(outcome)]() mutable {
      finish_phase(id, phase, std::move(outcome));
    });
  };

  if (phase == agents::HitlPhase::plan) {
    agents::PlanRequest request{s.code, s.kernel, s.feedback, agents::hitl_current_diagnosis(s)};
    pool_.submit(
        [make = proposer_factory(), request, done] { done(service::hitl_plan(*make(), request)); });
    return;
  }
  if (phase == agents::HitlPhase::test) {
    switch (agents::hitl_pending_work(s)) {
      case agents::HitlWork::Debug:
        return run_debug(std::move(s));
      case agents::HitlWork::RunFix:
        return run_fix(std::move(s));
      case agents::HitlWork::Phase:
        break;  // the test itself, below
    }
  }
  if (phase == agents::HitlPhase::implement) {
    // The user may have edited the plan document: what is on disk now is the plan.
    if (const std::string edited = read_file(plan_path(id)); !edited.empty()) s.plan = edited;
    save(s);
    agents::ImplementRequest request{s.code, s.kernel, s.plan, s.feedback};
    pool_.submit([make = proposer_factory(), request, done] {
      done(service::hitl_implement(*make(), request));
    });
    return;
  }

  // The remaining phases run the candidate on the kernel host against the task.
  const auto path = path_of_uri(s.uri);
  std::string reason;
  OpenDocument* doc = server_.find_document(s.uri);
  const bool infile = doc ? (doc->analyse(server_.target()).model.task.form() == "infile")
                          : (s.code.find("def reference(") != std::string::npos &&
                             s.code.find("def make_inputs(") != std::string::npos);
  // s.kernel names the kernel function; the task's entry point stays the default.
  std::optional<tpu::KernelRequest> request =
      path ? service::Workspace::kernel_request(*path, s.code, infile, reason) : std::nullopt;
  std::string error;
  std::shared_ptr<tpu::HostPool> h = request ? host(error) : nullptr;
  if (!request || !h) {
    HitlPhaseOutcome out;
    out.summary = phase_name + " cannot run: " + (request ? error : reason);
    finish_phase(id, phase, std::move(out));
    return;
  }
  const knowledge::TpuGeneration* target = &server_.target();
  const std::string code = s.code;
  const std::string kernel = s.kernel;
  const std::string token =
      progress_.begin("MaxKernel step by step: " + phase_name + " (" + kernel + ")", nullptr);
  progress_.report(token, "on " + h->name());
  auto is_cancelled = [cancelled, mine = workspace_.jobs().add(id, kJobGroup, token, s.uri)] {
    return cancelled->load() || mine->load();
  };
  HitlHostJob job;
  job.host = h.get();
  job.request = std::move(*request);
  job.code = code;
  job.kernel = kernel;
  job.run_id = s.run_id;
  job.target = target;
  job.cancelled = is_cancelled;
  job.diagnosis = agents::hitl_current_diagnosis(s);
  if (phase == agents::HitlPhase::autotune)
    job.tuning_cache = workspace_.cache(&job.uncached_reason).get();
  // Cancelled work reports only that it was cancelled (a partial result would mislead).
  auto finish = [done, is_cancelled, phase_name](HitlPhaseOutcome out) {
    if (is_cancelled()) {
      out = HitlPhaseOutcome{};
      out.summary = phase_name + " cancelled";
    }
    done(std::move(out));
  };

  switch (phase) {
    case agents::HitlPhase::validate:
      pool_.submit([h, job, finish] { finish(service::hitl_validate(job)); });
      return;
    case agents::HitlPhase::test:
      pool_.submit([h, job, finish] { finish(service::hitl_test(job)); });
      return;
    case agents::HitlPhase::autotune:
      pool_.submit([h, job, finish] { finish(service::hitl_autotune(job)); });
      return;
    case agents::HitlPhase::profile:
      pool_.submit([h, job, finish] { finish(service::hitl_profile(job)); });
      return;
    case agents::HitlPhase::plan:
    case agents::HitlPhase::implement:
      return;  // ran above, without a host
  }
}

void HitlRuns::run_debug(SessionRecord s) {
  const std::optional<std::string> report = agents::hitl_debug_report(s);
  if (!report) {
    HitlPhaseOutcome out;
    out.summary = "nothing to debug: the latest test found no wrong result or error";
    return finish_phase(s.id, s.phase, std::move(out));
  }
  agents::DebugRequest request;
  request.code = s.code;
  request.kernel = s.kernel;
  request.report = *report;
  request.attempt = agents::hitl_debug_attempts(s) + 1;
  // What the session's code was written from: the task's reference where it has its own file,
  // else the kernel as the session found it (its run's root) when the code has changed since.
  if (const auto path = path_of_uri(s.uri)) request.origin = separate_reference(*path);
  if (agents::RunStore* runs = run_store(); request.origin.empty() && runs && !s.run_id.empty()) {
    try {
      const std::vector<agents::NodeRecord> nodes = runs->nodes(s.run_id);
      if (!nodes.empty() && nodes.front().code != s.code) request.origin = nodes.front().code;
    } catch (const std::exception& e) {
      spdlog::warn("step by step: the session's first code is not readable: {}", e.what());
    }
  }
  const std::string id = s.id;
  const agents::HitlPhase phase = s.phase;
  pool_.submit([this, make = proposer_factory(), request, id, phase] {
    HitlPhaseOutcome outcome = service::hitl_debug(*make(), request);
    server_.post([this, id, phase, outcome = std::move(outcome)]() mutable {
      finish_phase(id, phase, std::move(outcome));
    });
  });
}

void HitlRuns::run_fix(SessionRecord s) {
  // The user may have edited the fix: what is on disk now is what runs.
  const std::filesystem::path file = fix_path(s.id);
  const std::string fix = read_file(file);
  if (fix.empty() || fix == s.code) {
    agents::hitl_record_result(s,
                               "no fix to run: " + file.string() +
                                   (fix.empty() ? " is missing or empty" : " is the current code") +
                                   "; Debug this asks the debugger again");
    save(s);
    return ask(s.id);
  }
  s.proposed = fix;  // no event before the edit's answer: it tells a fix's edit by "run fix"
  send_edit(s, "the debugger's fix (" + file.filename().string() + ")");
}

void HitlRuns::finish_phase(const std::string& id, agents::HitlPhase phase,
                            HitlPhaseOutcome outcome) {
  if (const std::optional<service::Job> work = workspace_.jobs().remove(id))
    progress_.end(work->progress, outcome.summary.substr(0, 120));
  std::optional<SessionRecord> s = load(id);
  if (s && outcome.llm_calls > 0) {  // spent even when the work no longer counts
    record_llm_cost(*s, outcome);
    save(*s);
  }
  // Stopped meanwhile, or moved on (a jump): this work no longer counts.
  if (!s || s->status != agents::SessionStatus::running || s->phase != phase) return;
  if (outcome.has_diagnostics) {
    const OpenDocument* doc = server_.find_document(s->uri);
    diagnostics_[s->uri] = {doc ? doc->text.version() : s->doc_version, outcome.diagnostics};
    server_.republish(s->uri);
  }
  // Every test that ran keeps its report ("" when correct): "Debug this" works on the latest.
  if (phase == agents::HitlPhase::test && outcome.has_diagnostics)
    agents::hitl_record_report(*s, outcome.debug_report);
  if (!outcome.fix.empty()) {
    const std::filesystem::path path = fix_path(id);
    if (!write_file(path, outcome.fix)) {
      outcome.summary = "cannot write the debugger's fix to " + path.string();
    } else {
      if (!client_.show_document) outcome.summary += " (" + path.string() + ")";
      agents::hitl_record(*s, "fix", outcome.summary);
      if (client_.show_document)
        outgoing_.send("window/showDocument",
                       {{"uri", "file://" + path.string()}, {"takeFocus", true}},
                       [](const json*, const rpc::Error* error) {
                         if (error) spdlog::warn("showDocument failed: {}", error->message);
                       });
    }
  }
  if (outcome.node && !s->run_id.empty()) {
    if (agents::RunStore* runs = run_store()) {
      try {
        runs->add_node(*outcome.node);
      } catch (const std::exception& e) {
        spdlog::warn("step by step: node not recorded: {}", e.what());
      }
    }
  }
  if (phase == agents::HitlPhase::plan && !outcome.plan.empty()) {
    s->plan = outcome.plan;
    s->feedback.clear();
    const std::filesystem::path path = plan_path(id);
    if (!write_file(path, s->plan)) {
      outcome.summary = "cannot write the plan to " + path.string();
    } else if (client_.show_document) {
      const std::string plan_uri = "file://" + path.string();
      outgoing_.send("window/showDocument", {{"uri", plan_uri}, {"takeFocus", true}},
                     [](const json*, const rpc::Error* error) {
                       if (error) spdlog::warn("showDocument failed: {}", error->message);
                     });
    }
  }
  if (!outcome.report.empty()) {
    const std::filesystem::path path = plan_path(id);
    write_file(path, read_file(path) + outcome.report);
    server_.notify("window/showMessage",
                   {{"type", 3}, {"message", "MaxKernel: " + outcome.summary}});
  }
  if (!outcome.proposed.empty()) {
    s->proposed = outcome.proposed;
    s->feedback.clear();
    agents::hitl_record(*s, "proposed", outcome.summary);
    send_edit(*s, outcome.summary);
    return;
  }
  s->feedback.clear();
  if (outcome.diagnosis) agents::hitl_record_diagnosis(*s, outcome.diagnosis->diagnosis);
  agents::hitl_record_result(*s, outcome.summary, outcome.suggestion);
  save(*s);
  ask(id);
}

// ----- edits --------------------------------------------------------------------------------

void HitlRuns::send_edit(SessionRecord& s, const std::string& label) {
  OpenDocument* doc = server_.find_document(s.uri);
  if (!doc) {
    agents::hitl_record_result(s, label +
                                      "; edit not sent: the document is not open (open it, "
                                      "then Retry)");
    save(s);
    return ask(s.id);
  }
  // The answer to an applied edit may overtake the client's didChange (the spec does not order
  // them): a document whose text is still exactly the session's candidate lost nothing.
  if (doc->text.version() != s.doc_version && doc->text.text() == s.code)
    s.doc_version = doc->text.version();
  if (doc->text.version() != s.doc_version) {
    const std::string why = "the document changed since the session read it (version " +
                            std::to_string(s.doc_version) + ", now " +
                            std::to_string(doc->text.version()) + ")";
    server_.notify("window/showMessage",
                   {{"type", 2},
                    {"message", "MaxKernel: " + why +
                                    "; the edit was not sent. Answer Retry to re-read the "
                                    "document and propose again."}});
    agents::hitl_record(s, "edit not sent", why);
    agents::hitl_record_result(s, "edit not sent: " + why);
    save(s);
    return ask(s.id);
  }
  if (!client_.apply_edit || !client_.document_changes) {
    // No versioned edits in this editor: leave the candidate beside the plan instead.
    const std::filesystem::path file = plan_path(s.id).parent_path() / "candidate.py";
    write_file(file, s.proposed);
    agents::hitl_record_result(
        s,
        label + "; this editor cannot apply versioned edits: the candidate is in " + file.string());
    save(s);
    return ask(s.id);
  }
  save(s);
  const std::string title = "MaxKernel: " + to_string(s.phase) + " (" + s.kernel + ")";
  const EditAnnotation annotation{"maxkernel.hitl", title, label};
  json edit =
      to_workspace_edit({{s.uri, s.doc_version, false, minimal_edits(doc->text, s.proposed)}},
                        /*document_changes=*/true, &annotation);
  const std::string id = s.id;
  outgoing_.send(
      "workspace/applyEdit", {{"label", title}, {"edit", std::move(edit)}},
      [this, id, label](const json* result, const rpc::Error* error) {
        on_edit_answer(id, label, result, error);
      },
      kEditTimeout);
}

void HitlRuns::on_edit_answer(const std::string& id, const std::string& label, const json* result,
                              const rpc::Error* error) {
  std::optional<SessionRecord> s = load(id);
  if (!s || s->status != agents::SessionStatus::running) return;
  // The edit was the debugger's fix ("Run the fix"): once applied, the test runs on it.
  const bool fix = agents::hitl_pending_work(*s) == agents::HitlWork::RunFix;
  if (error) {
    agents::hitl_record_result(*s, label + "; the edit failed: " + error->message);
  } else if (result && result->is_object() && result->value("applied", false)) {
    // The client applied it. Its didChange may not have arrived yet (clients send the answer
    // first or second): then the proposal is the candidate, and the version is adopted once the
    // document shows that text (send_edit, Retry).
    const OpenDocument* doc = server_.find_document(s->uri);
    if (doc && doc->text.version() != s->doc_version) {
      s->code = doc->text.text();
      s->doc_version = doc->text.version();
    } else {
      s->code = s->proposed;
    }
    s->proposed.clear();
    agents::hitl_record(*s, "applied", label);
    if (fix) {
      save(*s);
      return run_phase(*s);  // status running, phase test: the test itself now
    }
    agents::hitl_record_result(*s, label + "; edit applied");
  } else {
    std::string why = "rejected";
    if (result && result->is_object() && result->contains("failureReason") &&
        (*result)["failureReason"].is_string())
      why += ": " + (*result)["failureReason"].get<std::string>();
    agents::hitl_record(*s, "rejected", why);
    agents::hitl_record_result(*s, label + "; edit " + why);
  }
  save(*s);
  ask(id);
}

// ----- questions ----------------------------------------------------------------------------

void HitlRuns::ask(const std::string& id) {
  std::optional<SessionRecord> s = load(id);
  if (!s || s->status != agents::SessionStatus::awaiting) return;
  const agents::HitlQuestion q = agents::hitl_question(*s, debugger_available());
  json actions = json::array();
  for (const agents::HitlAction& a : q.actions) {
    json item = {{"title", a.title}};
    if (a.feedback) item["feedback"] = true;
    actions.push_back(std::move(item));
  }
  const int serial = ++question_serial_[id];
  outgoing_.send(
      "window/showMessageRequest",
      {{"type", 3}, {"message", "MaxKernel: " + q.message}, {"actions", std::move(actions)}},
      [this, id, serial](const json* result, const rpc::Error* error) {
        on_answer(id, serial, result, error);
      },
      kQuestionTimeout);
}

void HitlRuns::on_answer(const std::string& id, int serial, const json* result,
                         const rpc::Error* error) {
  if (question_serial_[id] != serial) return;  // a newer question (resume) replaced this one
  std::optional<SessionRecord> s = load(id);
  if (!s || s->status != agents::SessionStatus::awaiting) return;
  agents::HitlAnswer answer;
  if (error) {
    spdlog::info("step by step: question of {} not answered: {}", id, error->message);
  } else if (result && result->is_object() && (*result).contains("title") &&
             (*result)["title"].is_string()) {
    const json feedback = result->value("feedback", json());
    try {
      answer = agents::hitl_answer_from_title(
          (*result)["title"].get<std::string>(),
          feedback.is_string() ? feedback.get<std::string>() : std::string());
    } catch (const std::invalid_argument& e) {
      server_.notify("window/showMessage",
                     {{"type", 1}, {"message", std::string("MaxKernel: ") + e.what()}});
      return ask(id);
    }
  }
  // Retry after the document moved: re-read it, so the next proposal starts from what is there.
  if (answer.kind == agents::HitlAnswer::Kind::Retry) {
    if (OpenDocument* doc = server_.find_document(s->uri);
        doc && doc->text.version() != s->doc_version && doc->text.text() != s->code) {
      agents::hitl_record(*s, "rebased", "document version " + std::to_string(doc->text.version()));
      s->code = doc->text.text();
      s->doc_version = doc->text.version();
    }
  }
  const HitlNext next = agents::hitl_decide(*s, answer);
  save(*s);
  if (next == HitlNext::RunPhase) run_phase(*s);
  if (next == HitlNext::Finished) finished(*s);
}

void HitlRuns::finished(const SessionRecord& s) {
  question_serial_.erase(s.id);
  if (agents::RunStore* runs = run_store(); runs && !s.run_id.empty()) {
    try {
      if (std::optional<agents::RunRecord> run = runs->run(s.run_id)) {
        run->status = s.status == agents::SessionStatus::done ? agents::RunStatus::done
                                                              : agents::RunStatus::stopped;
        run->stop_reason = "step by step: " + to_string(s.status);
        runs->update_run(*run);
      }
    } catch (const std::exception& e) {
      spdlog::warn("step by step: run not updated: {}", e.what());
    }
  }
  server_.notify(
      "window/showMessage",
      {{"type", 3},
       {"message",
        "MaxKernel: step-by-step session " + s.id + " " +
            (s.status == agents::SessionStatus::done ? "finished" : to_string(s.status)) + "."}});
}

}  // namespace mk::server
