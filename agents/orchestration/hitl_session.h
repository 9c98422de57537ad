// The "Optimize step by step" state machine: the phases plan -> implement -> validate -> test ->
// autotune -> profile, the question asked after each, and what each answer does to the session.
// Plain data and decisions only: no LSP, no worker. The server glue (lsp/server/hitl_runs) runs
// the phase work and asks the questions; the Proposer makes plans and candidates.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agents/llm/llm_client.h"
#include "agents/orchestration/diagnosis.h"
#include "agents/orchestration/hitl_phase.h"
#include "agents/orchestration/hitl_suggestion.h"
#include "agents/orchestration/session_store.h"

namespace mk::agents {

// One button of the question. `feedback`: the client asks the user for text and returns it.
struct HitlAction {
  std::string title;
  bool feedback = false;
};

struct HitlQuestion {
  std::string message;  // "Step 2/6 implement: <summary>. Next?"
  std::vector<HitlAction> actions;
};

// The mark on the action the phase suggests ("Next phase: autotune (suggested)").
inline constexpr const char* kSuggestedMark = " (suggested)";

// The test phase's debugger: "Debug this" asks it for a fix of the wrong (or failed) candidate,
// given the worker's report; the fix is a file the user may edit, and "Run the fix" applies the
// file as it is then and tests again. A person decides each attempt, so a session allows one
// more than a search's debugger loop (LlmExpanderOptions::max_debug_attempts).
inline constexpr const char* kDebugThis = "Debug this";
inline constexpr const char* kRunFix = "Run the fix";
inline constexpr int kHitlDebugAttempts = 3;

struct HitlAnswer {
  enum class Kind { Approve, Revise, Retry, Skip, GoTo, Stop, Dismissed, Debug, RunFix };
  Kind kind = Kind::Dismissed;
  std::string feedback;               // Revise
  HitlPhase phase = HitlPhase::plan;  // GoTo
};

// The work run_phase does next in the session's phase: the phase's own, the debugger's (after
// "Debug this") or applying the fix file (after "Run the fix").
enum class HitlWork { Phase, Debug, RunFix };

// What the caller does after an answer.
enum class HitlNext {
  RunPhase,  // run the work of session.phase (status is "running")
  Wait,      // nothing: the session stays paused on its question (asked again on resume)
  Finished,  // the session is done or stopped
};

// The question pending for a session that has finished its phase work. When the phase suggested
// a next step, the message says which and why, and its action comes first of the next-phase
// choices, marked kSuggestedMark (accepting is Approve, the first choice anyway). After a test
// with a report: "Run the fix" first while a fix is pending, then "Debug this" when `debugger`
// (an LLM is set up) and attempts are left; without an LLM the message says it needs one.
HitlQuestion hitl_question(const SessionRecord& session, bool debugger = false);
// Maps the title of the chosen action (and the typed feedback) back to an answer (a suggested
// action's mark is ignored); a title the question never offered is an invalid_argument error.
HitlAnswer hitl_answer_from_title(const std::string& title, const std::string& feedback);

// A new session on `code`, at the plan phase, about to run.
SessionRecord hitl_begin(std::string uri, std::string kernel, int64_t version, std::string code);
// The phase work finished: record its summary (and the next step it suggests, if any; history
// event "suggested" just before "result") and wait for the user's answer.
void hitl_record_result(SessionRecord& session, const std::string& summary,
                        const std::optional<HitlSuggestion>& suggestion = std::nullopt);
// The suggestion recorded with the session's latest result, if any.
std::optional<HitlSuggestion> hitl_pending_suggestion(const SessionRecord& session);
// A profile's diagnosis of the session's code (history event "diagnosis", its JSON), and the
// latest one while it still describes the code: an applied edit or a rebase ends it.
void hitl_record_diagnosis(SessionRecord& session, const Diagnosis& diagnosis);
std::optional<Diagnosis> hitl_current_diagnosis(const SessionRecord& session);
// Every test's report (history event "report"): on a wrong or failed candidate the worker's
// correctness report or error, as the search's debugger gets it; "" on a correct one. The
// latest test's, while it still describes the code (an applied edit or a rebase ends it).
void hitl_record_report(SessionRecord& session, const std::string& report);
std::optional<std::string> hitl_debug_report(const SessionRecord& session);
// The debugger proposed a fix (event "fix") that has not been applied since, nor replaced by a
// newer report.
bool hitl_fix_pending(const SessionRecord& session);
// The fixes the debugger proposed since the session last entered its phase (approved, skipped,
// jumped or rebased).
int hitl_debug_attempts(const SessionRecord& session);
// What run_phase runs now: after "Debug this" the debugger, after "Run the fix" the fix (a
// resume in between runs the same again).
HitlWork hitl_pending_work(const SessionRecord& session);
// Records an event of the current phase in the history (edits applied/rejected, rebases, ...).
void hitl_record(SessionRecord& session, const std::string& event, const std::string& text);
// Applies the user's answer to the session (history, phase, status, feedback).
HitlNext hitl_decide(SessionRecord& session, const HitlAnswer& answer);
// True while the session may still advance (not done, stopped or failed).
bool hitl_active(const SessionRecord& session);

// Where plans and candidates come from. The rule-based proposer needs no LLM; an LLM planner /
// implementer plugs in through the same interface.
struct PlanRequest {
  std::string code;
  std::string kernel;
  std::string feedback;  // the user's feedback on the previous plan ("" = none)
  // The last profile's diagnosis of this code, if any: the rule-based plan ticks only what
  // answers it, those lines first.
  std::optional<Diagnosis> diagnosis = std::nullopt;
};

struct ImplementRequest {
  std::string code;
  std::string kernel;
  std::string plan;      // the plan markdown as the user left it
  std::string feedback;  // the user's feedback on the previous attempt
};

// What the debugger is given in a session: the failing code, what it was written from (the
// task's reference file, else the code the session started from; "" = neither), the test's
// report and which attempt this is.
struct DebugRequest {
  std::string code;
  std::string origin;
  std::string kernel;
  std::string report;
  int attempt = 1;
  int max_attempts = kHitlDebugAttempts;
};

struct Implementation {
  std::string code;                  // the whole new file ("" or == input: nothing applied)
  std::vector<std::string> applied;  // the plan lines that were applied, in order
  std::vector<std::string> skipped;  // ticked lines that no longer apply
};

// Throws std::runtime_error (llm::LlmError for LLM failures) with a message for the user.
// The top of a plan document: its title (`by`, e.g. " (LLM planner)", follows the kernel's name),
// `how` (what the user does with it, ending in a newline) and the user's feedback, if any.
std::string plan_document_head(const PlanRequest& request, const std::string& by,
                               const std::string& how);

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string plan(const PlanRequest& request) = 0;  // markdown
  virtual Implementation implement(const ImplementRequest& request) = 0;
  // The debugger's fix: the whole new file. Only an LLM debugs; the others say so.
  virtual std::string debug(const DebugRequest& request);
  virtual bool can_debug() const { return false; }
  // What this proposer's LLM calls cost so far (tokens, usd) and how many there were.
  virtual llm::Usage usage() const { return {}; }
  virtual int llm_calls() const { return 0; }
  virtual std::string describe() const { return "rules"; }
};

// The plan is a markdown checklist of the rule expander's proposals ("- [x] autotune: BLOCK_ROWS
// 8 -> 16"); implement applies the ticked lines in order, each on top of the previous one where
// it still applies (the expander is re-run on the current code and the proposal with the same
// strategy and description is taken).
class RuleProposer : public Proposer {
 public:
  explicit RuleProposer(size_t max_items = 8) : max_items_(max_items) {}
  std::string plan(const PlanRequest& request) override;
  Implementation implement(const ImplementRequest& request) override;

 private:
  size_t max_items_;
};

// The ticked checklist items of a plan: "strategy: description" (text after "- [x] ").
std::vector<std::string> ticked_plan_items(const std::string& plan);

}  // namespace mk::agents
