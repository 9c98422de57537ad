#include "agents/orchestration/hitl_session.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "agents/orchestration/record_ids.h"
#include "agents/orchestration/rule_expander.h"

namespace mk::agents {

namespace {

constexpr const char* kApprove = "Approve";
constexpr const char* kRevise = "Revise with feedback";
constexpr const char* kRetry = "Retry";
constexpr const char* kSkip = "Skip";
constexpr const char* kStop = "Stop";
constexpr const char* kNextPhasePrefix = "Next phase: ";
constexpr const char* kSuggestedEvent = "suggested";
constexpr const char* kDiagnosisEvent = "diagnosis";
constexpr const char* kAccept = "accept";  // a suggestion to finish, as the history writes it
constexpr const char* kReportEvent = "report";
constexpr const char* kFixEvent = "fix";
constexpr const char* kDebugEvent = "debug";
constexpr const char* kRunFixEvent = "run fix";

std::string trim(const std::string& s) {
  const size_t start = s.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(start, end - start + 1);
}

// The phase a "Next phase: X" title names; nullopt for any other title.
std::optional<HitlPhase> phase_named_by(const std::string& title) {
  const std::string_view prefix = kNextPhasePrefix;
  if (!title.starts_with(prefix)) return std::nullopt;
  return parse_hitl_phase(std::string_view(title).substr(prefix.size()));
}

// Moves to the phase after the current one, or finishes the session after the last.
HitlNext advance(SessionRecord& s) {
  const size_t index = hitl_phase_index(s.phase);
  s.feedback.clear();
  if (index + 1 >= hitl_phases().size()) {
    s.status = SessionStatus::done;
    hitl_record(s, "done", "all phases finished");
    return HitlNext::Finished;
  }
  s.phase = hitl_phases()[index + 1];
  s.status = SessionStatus::running;
  return HitlNext::RunPhase;
}

}  // namespace

HitlQuestion hitl_question(const SessionRecord& s, bool debugger) {
  const size_t index = hitl_phase_index(s.phase);
  std::string summary = trim(s.summary);
  while (!summary.empty() && summary.back() == '.') summary.pop_back();
  const std::optional<HitlSuggestion> suggestion = hitl_pending_suggestion(s);
  HitlQuestion q;
  q.message = "Step " + std::to_string(index + 1) + "/" + std::to_string(hitl_phases().size()) +
              " " + to_string(s.phase) + ": " + (summary.empty() ? "finished" : summary) + ".";
  if (suggestion)
    q.message += " Suggested next: " +
                 (suggestion->phase ? to_string(*suggestion->phase) : std::string(kAccept)) + " (" +
                 suggestion->why + ").";
  // A wrong or failed candidate: running the debugger's fix, or asking for one, comes first.
  const bool report = s.phase == HitlPhase::test && hitl_debug_report(s).has_value();
  const bool attempts_left = hitl_debug_attempts(s) < kHitlDebugAttempts;
  if (report && hitl_fix_pending(s)) q.actions.push_back({kRunFix, false});
  if (report && debugger && attempts_left) q.actions.push_back({kDebugThis, false});
  if (report && !debugger)
    q.message += " Debug this needs an LLM (set maxkernel.llm); the report is in the history.";
  if (report && debugger && !attempts_left)
    q.message += " The debugger's " + std::to_string(kHitlDebugAttempts) +
                 " attempts on this phase are spent.";
  q.message += " Next?";
  q.actions.push_back({kApprove, false});  // accepting is Approve, already the first choice
  q.actions.push_back({kRevise, true});
  q.actions.push_back({kRetry, false});
  q.actions.push_back({kSkip, false});
  if (suggestion && suggestion->phase)
    q.actions.push_back({kNextPhasePrefix + to_string(*suggestion->phase) + kSuggestedMark, false});
  for (const HitlPhase phase : hitl_phases())
    if (phase != s.phase && !(suggestion && suggestion->phase == phase))
      q.actions.push_back({kNextPhasePrefix + to_string(phase), false});
  q.actions.push_back({kStop, false});
  return q;
}

HitlAnswer hitl_answer_from_title(const std::string& marked, const std::string& feedback) {
  std::string title = marked;
  if (title.ends_with(kSuggestedMark))
    title.resize(title.size() - std::string_view(kSuggestedMark).size());
  HitlAnswer a;
  if (title == kApprove) {
    a.kind = HitlAnswer::Kind::Approve;
  } else if (title == kRevise) {
    a.kind = HitlAnswer::Kind::Revise;
    a.feedback = feedback;
  } else if (title == kRetry) {
    a.kind = HitlAnswer::Kind::Retry;
  } else if (title == kSkip) {
    a.kind = HitlAnswer::Kind::Skip;
  } else if (title == kStop) {
    a.kind = HitlAnswer::Kind::Stop;
  } else if (title == kDebugThis) {
    a.kind = HitlAnswer::Kind::Debug;
  } else if (title == kRunFix) {
    a.kind = HitlAnswer::Kind::RunFix;
  } else if (const std::optional<HitlPhase> phase = phase_named_by(title)) {
    a.kind = HitlAnswer::Kind::GoTo;
    a.phase = *phase;
  } else {
    throw std::invalid_argument("not an action of the step-by-step question: '" + marked + "'");
  }
  return a;
}

SessionRecord hitl_begin(std::string uri, std::string kernel, int64_t version, std::string code) {
  SessionRecord s;
  s.uri = std::move(uri);
  s.kernel = std::move(kernel);
  s.start_version = s.doc_version = version;
  s.code = std::move(code);
  s.phase = hitl_phases().front();
  s.status = SessionStatus::running;
  hitl_record(s, "started", "document version " + std::to_string(version));
  return s;
}

void hitl_record(SessionRecord& s, const std::string& event, const std::string& text) {
  s.history.push_back({s.phase, event, text, now_seconds()});
}

void hitl_record_result(SessionRecord& s, const std::string& summary,
                        const std::optional<HitlSuggestion>& suggestion) {
  s.summary = summary;
  s.status = SessionStatus::awaiting;
  if (suggestion)
    hitl_record(s, kSuggestedEvent,
                (suggestion->phase ? to_string(*suggestion->phase) : std::string(kAccept)) + ": " +
                    suggestion->why);
  hitl_record(s, "result", summary);
}

std::optional<HitlSuggestion> hitl_pending_suggestion(const SessionRecord& s) {
  // The latest result, and the entry just before it when that is its suggestion.
  for (size_t i = s.history.size(); i-- > 0;) {
    if (s.history[i].event != "result") continue;
    if (i == 0) return std::nullopt;
    const HistoryEntry& before = s.history[i - 1];
    if (before.event != kSuggestedEvent || before.phase != s.history[i].phase) return std::nullopt;
    const size_t colon = before.text.find(": ");
    if (colon == std::string::npos) return std::nullopt;
    HitlSuggestion out;
    const std::string name = before.text.substr(0, colon);
    out.why = before.text.substr(colon + 2);
    if (name != kAccept) {
      out.phase = parse_hitl_phase(name);
      if (!out.phase) return std::nullopt;
    }
    return out;
  }
  return std::nullopt;
}

void hitl_record_diagnosis(SessionRecord& s, const Diagnosis& diagnosis) {
  hitl_record(s, kDiagnosisEvent, diagnosis.to_json().dump());
}

std::optional<Diagnosis> hitl_current_diagnosis(const SessionRecord& s) {
  for (size_t i = s.history.size(); i-- > 0;) {
    const HistoryEntry& e = s.history[i];
    // The code changed after the diagnosis was made: it describes another kernel.
    if (e.event == "applied" || e.event == "rebased") return std::nullopt;
    if (e.event != kDiagnosisEvent) continue;
    const nlohmann::json j = nlohmann::json::parse(e.text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return Diagnosis::from_json(j);
  }
  return std::nullopt;
}

void hitl_record_report(SessionRecord& s, const std::string& report) {
  hitl_record(s, kReportEvent, report);
}

std::optional<std::string> hitl_debug_report(const SessionRecord& s) {
  for (size_t i = s.history.size(); i-- > 0;) {
    const HistoryEntry& e = s.history[i];
    if (e.event == "applied" || e.event == "rebased") return std::nullopt;
    // The latest test's: "" when it found the candidate correct.
    if (e.event == kReportEvent) return e.text.empty() ? std::nullopt : std::optional(e.text);
  }
  return std::nullopt;
}

bool hitl_fix_pending(const SessionRecord& s) {
  for (size_t i = s.history.size(); i-- > 0;) {
    const std::string& event = s.history[i].event;
    if (event == "applied" || event == "rebased" || event == kReportEvent) return false;
    if (event == kFixEvent) return true;
  }
  return false;
}

int hitl_debug_attempts(const SessionRecord& s) {
  int fixes = 0;
  for (size_t i = s.history.size(); i-- > 0;) {
    const std::string& event = s.history[i].event;
    if (event == "approved" || event == "skipped" || event == "jump" || event == "rebased") break;
    fixes += event == kFixEvent;
  }
  return fixes;
}

HitlWork hitl_pending_work(const SessionRecord& s) {
  for (size_t i = s.history.size(); i-- > 0;) {
    const std::string& event = s.history[i].event;
    if (event == "resumed" || event == "llm") continue;  // neither changes what was asked for
    if (event == kDebugEvent) return HitlWork::Debug;
    if (event == kRunFixEvent) return HitlWork::RunFix;
    return HitlWork::Phase;
  }
  return HitlWork::Phase;
}

bool hitl_active(const SessionRecord& s) {
  return s.status == SessionStatus::running || s.status == SessionStatus::awaiting;
}

HitlNext hitl_decide(SessionRecord& s, const HitlAnswer& answer) {
  if (!hitl_active(s)) return HitlNext::Finished;
  switch (answer.kind) {
    case HitlAnswer::Kind::Approve:
      hitl_record(s, "approved", s.summary);
      return advance(s);
    case HitlAnswer::Kind::Skip:
      hitl_record(s, "skipped", "");
      s.proposed.clear();
      return advance(s);
    case HitlAnswer::Kind::Revise:
      hitl_record(s, "feedback", answer.feedback);
      s.feedback = answer.feedback;
      s.status = SessionStatus::running;
      return HitlNext::RunPhase;
    case HitlAnswer::Kind::Retry:
      hitl_record(s, "retry", "");
      s.status = SessionStatus::running;
      return HitlNext::RunPhase;
    case HitlAnswer::Kind::GoTo:
      hitl_record(s, "jump", to_string(answer.phase));
      s.phase = answer.phase;
      s.feedback.clear();
      s.status = SessionStatus::running;
      return HitlNext::RunPhase;
    case HitlAnswer::Kind::Debug:
    case HitlAnswer::Kind::RunFix:
      hitl_record(s, answer.kind == HitlAnswer::Kind::Debug ? kDebugEvent : kRunFixEvent, "");
      s.status = SessionStatus::running;
      return HitlNext::RunPhase;
    case HitlAnswer::Kind::Stop:
      hitl_record(s, "stopped", "");
      s.status = SessionStatus::stopped;
      return HitlNext::Finished;
    case HitlAnswer::Kind::Dismissed:
      hitl_record(s, "dismissed", "");
      s.status = SessionStatus::awaiting;
      return HitlNext::Wait;
  }
  return HitlNext::Wait;
}

std::vector<std::string> ticked_plan_items(const std::string& plan) {
  std::vector<std::string> items;
  std::istringstream in(plan);
  std::string line;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.size() < 6 || (t[0] != '-' && t[0] != '*')) continue;
    if (t.compare(1, 5, " [x] ") != 0 && t.compare(1, 5, " [X] ") != 0) continue;
    const std::string item = trim(t.substr(6));
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string plan_document_head(const PlanRequest& request, const std::string& by,
                               const std::string& how) {
  std::string md = "# MaxKernel plan for `" + (request.kernel.empty() ? "kernel" : request.kernel) +
                   "`" + by + "\n\n" + how + "\n";
  if (!request.feedback.empty()) md += "> Your feedback: " + request.feedback + "\n\n";
  return md;
}

std::string Proposer::debug(const DebugRequest&) {
  throw std::runtime_error("debugging needs an LLM (set maxkernel.llm)");
}

std::string RuleProposer::plan(const PlanRequest& request) {
  RuleExpander expander;
  ExpansionRequest er;
  er.parent_code = request.code;
  er.kernel_name = request.kernel;
  er.max_children = max_items_;
  er.diagnosis = request.diagnosis;
  std::vector<Proposal> proposals = expander.expand(er);
  std::string md = plan_document_head(
      request, "",
      "Untick the strategies you do not want (or reorder the lines), save this file,\n"
      "then answer Approve. Implement applies the ticked lines in order, each on top\n"
      "of the previous one where it still applies.\n");
  // With a diagnosis, what answers it (a block move only in the direction it asks for) comes
  // first and is ticked; the rest stays, unticked.
  const int direction = request.diagnosis ? preferred_block_direction(*request.diagnosis) : 0;
  auto answers = [&](const Proposal& p) {
    return !p.answers.empty() &&
           (direction == 0 || block_move_direction(p.description) != -direction);
  };
  const bool answered =
      request.diagnosis && std::any_of(proposals.begin(), proposals.end(), answers);
  if (answered) {
    md += "Ordered by the last profile's diagnosis: " + request.diagnosis->summary + "\n\n";
    std::stable_partition(proposals.begin(), proposals.end(), answers);
  }
  if (proposals.empty()) md += "(no rule-based strategy applies to this kernel)\n";
  for (const Proposal& p : proposals) {
    const bool ticked = !answered || answers(p);
    md += std::string(ticked ? "- [x] " : "- [ ] ") + p.strategy + ": " + p.description + "\n";
  }
  return md;
}

Implementation RuleProposer::implement(const ImplementRequest& request) {
  Implementation out;
  std::string current = request.code;
  RuleExpander expander;
  for (const std::string& item : ticked_plan_items(request.plan)) {
    ExpansionRequest er;
    er.parent_code = current;
    er.kernel_name = request.kernel;
    er.max_children = 1000;  // every proposal: the ticked one may be anywhere in the list
    bool found = false;
    for (Proposal& p : expander.expand(er)) {
      if (p.strategy + ": " + p.description != item) continue;
      current = std::move(p.code);
      found = true;
      break;
    }
    (found ? out.applied : out.skipped).push_back(item);
  }
  out.code = std::move(current);
  return out;
}

}  // namespace mk::agents
