// The step-by-step (HITL) state machine and its persistence: transitions for every answer, the
// question text, the rule-based plan/implement, and sessions surviving a reopened SQLite file.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/orchestration/hitl_session.h"
#include "agents/orchestration/run_store.h"
#include "agents/orchestration/session_store.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;

std::string scale_rows() {
  std::ifstream in(fs::path(MK_SOURCE_DIR) / "tests/optimize/kernels/scale_rows.py");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

SessionRecord awaiting(const std::string& phase) {
  SessionRecord s = hitl_begin("file:///k.py", "_kernel", 3, "code");
  s.phase = hitl_phase_from_string(phase);
  hitl_record_result(s, "did " + phase);
  return s;
}

HitlAnswer answer(const std::string& title, const std::string& feedback = "") {
  return hitl_answer_from_title(title, feedback);
}

class TempStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mk-hitl-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path() const { return dir_ / "store.sqlite"; }
  fs::path dir_;
};

TEST(HitlQuestion, NamesTheStepAndOffersEveryChoice) {
  SessionRecord s = awaiting("implement");
  s.summary = "applied 2 of 3 ticked strategies.";
  const HitlQuestion q = hitl_question(s);
  EXPECT_EQ(q.message, "Step 2/6 implement: applied 2 of 3 ticked strategies. Next?");
  std::vector<std::string> titles;
  for (const HitlAction& a : q.actions) {
    titles.push_back(a.title);
    EXPECT_EQ(a.feedback, a.title == "Revise with feedback") << a.title;
  }
  EXPECT_EQ(titles.front(), "Approve");
  EXPECT_EQ(titles.back(), "Stop");
  for (const char* t : {"Revise with feedback", "Retry", "Skip", "Next phase: plan",
                        "Next phase: validate", "Next phase: profile"})
    EXPECT_NE(std::find(titles.begin(), titles.end(), t), titles.end()) << t;
  EXPECT_EQ(std::find(titles.begin(), titles.end(), "Next phase: implement"), titles.end());
}

TEST(HitlAnswer, MapsTitlesAndRejectsUnknownOnes) {
  EXPECT_EQ(answer("Approve").kind, HitlAnswer::Kind::Approve);
  const HitlAnswer revise = answer("Revise with feedback", "use bigger blocks");
  EXPECT_EQ(revise.kind, HitlAnswer::Kind::Revise);
  EXPECT_EQ(revise.feedback, "use bigger blocks");
  const HitlAnswer jump = answer("Next phase: test");
  EXPECT_EQ(jump.kind, HitlAnswer::Kind::GoTo);
  EXPECT_EQ(jump.phase, HitlPhase::test);
  EXPECT_THROW(answer("Next phase: lunch"), std::invalid_argument);
  EXPECT_THROW(answer("approve"), std::invalid_argument);
}

TEST(HitlDecide, ApproveAdvancesToTheNextPhaseAndRecordsIt) {
  SessionRecord s = awaiting("plan");
  EXPECT_EQ(hitl_decide(s, answer("Approve")), HitlNext::RunPhase);
  EXPECT_EQ(s.phase, HitlPhase::implement);
  EXPECT_EQ(s.status, SessionStatus::running);
  EXPECT_EQ(s.history.back().event, "approved");
  EXPECT_EQ(s.history.back().phase, HitlPhase::plan);
  EXPECT_EQ(s.history.back().text, "did plan");
}

TEST(HitlDecide, ReviseReRunsThePhaseWithTheFeedbackRecorded) {
  SessionRecord s = awaiting("plan");
  EXPECT_EQ(hitl_decide(s, answer("Revise with feedback", "only block sizes")), HitlNext::RunPhase);
  EXPECT_EQ(s.phase, HitlPhase::plan);
  EXPECT_EQ(s.status, SessionStatus::running);
  EXPECT_EQ(s.feedback, "only block sizes");
  EXPECT_EQ(s.history.back().event, "feedback");
  EXPECT_EQ(s.history.back().text, "only block sizes");
  // The next result consumes nothing by itself; approving clears the feedback.
  hitl_record_result(s, "plan v2");
  hitl_decide(s, answer("Approve"));
  EXPECT_TRUE(s.feedback.empty());
}

TEST(HitlDecide, RetrySkipJumpStopAndDismiss) {
  SessionRecord retry = awaiting("test");
  EXPECT_EQ(hitl_decide(retry, answer("Retry")), HitlNext::RunPhase);
  EXPECT_EQ(retry.phase, HitlPhase::test);

  SessionRecord skip = awaiting("implement");
  skip.proposed = "new code";
  EXPECT_EQ(hitl_decide(skip, answer("Skip")), HitlNext::RunPhase);
  EXPECT_EQ(skip.phase, HitlPhase::validate);
  EXPECT_TRUE(skip.proposed.empty());

  SessionRecord jump = awaiting("plan");
  EXPECT_EQ(hitl_decide(jump, answer("Next phase: autotune")), HitlNext::RunPhase);
  EXPECT_EQ(jump.phase, HitlPhase::autotune);
  EXPECT_EQ(jump.history.back().event, "jump");

  SessionRecord stop = awaiting("validate");
  EXPECT_EQ(hitl_decide(stop, answer("Stop")), HitlNext::Finished);
  EXPECT_EQ(stop.status, SessionStatus::stopped);
  EXPECT_FALSE(hitl_active(stop));
  // A stopped session ignores later answers.
  EXPECT_EQ(hitl_decide(stop, answer("Approve")), HitlNext::Finished);
  EXPECT_EQ(stop.phase, HitlPhase::validate);

  SessionRecord dismissed = awaiting("test");
  EXPECT_EQ(hitl_decide(dismissed, HitlAnswer{}), HitlNext::Wait);
  EXPECT_EQ(dismissed.status, SessionStatus::awaiting);
  EXPECT_EQ(dismissed.phase, HitlPhase::test);
}

TEST(HitlDecide, ApprovingTheLastPhaseFinishesTheSession) {
  SessionRecord s = awaiting("profile");
  EXPECT_EQ(hitl_decide(s, answer("Approve")), HitlNext::Finished);
  EXPECT_EQ(s.status, SessionStatus::done);
  SessionRecord skipped = awaiting("profile");
  EXPECT_EQ(hitl_decide(skipped, answer("Skip")), HitlNext::Finished);
  EXPECT_EQ(skipped.status, SessionStatus::done);
}

TEST(HitlDecide, WalksAllSixPhasesInOrder) {
  SessionRecord s = hitl_begin("file:///k.py", "k", 1, "code");
  std::vector<HitlPhase> seen;
  for (int guard = 0; guard < 10 && hitl_active(s); ++guard) {
    seen.push_back(s.phase);
    hitl_record_result(s, "ok");
    hitl_decide(s, answer("Approve"));
  }
  EXPECT_EQ(seen, hitl_phases());
  EXPECT_EQ(s.status, SessionStatus::done);
}

// A test that found the code wrong, with the worker's report, waiting for the user's answer.
SessionRecord tested_wrong() {
  SessionRecord s = hitl_begin("file:///k.py", "_kernel", 3, "code");
  s.phase = HitlPhase::test;
  hitl_record_report(s, "incorrect: output 0: NaN\n  whole row 5 is NaN");
  hitl_record_result(s, "test on local: incorrect: output 0: NaN");
  return s;
}

std::vector<std::string> titles(const HitlQuestion& q) {
  std::vector<std::string> out;
  for (const HitlAction& a : q.actions) out.push_back(a.title);
  return out;
}

TEST(HitlDebug, AWrongTestOffersDebugThisFirstOnlyWithAnLlm) {
  SessionRecord s = tested_wrong();
  EXPECT_EQ(titles(hitl_question(s, true)).front(), kDebugThis);
  const HitlQuestion rules = hitl_question(s, false);
  for (const std::string& t : titles(rules)) EXPECT_NE(t, kDebugThis);
  EXPECT_NE(rules.message.find("Debug this needs an LLM (set maxkernel.llm)"), std::string::npos)
      << rules.message;
  // A correct test (its report is "") or another phase offers nothing and says nothing.
  hitl_record_report(s, "");
  hitl_record_result(s, "test on local: correct");
  EXPECT_EQ(titles(hitl_question(s, true)).front(), "Approve");
  EXPECT_EQ(hitl_question(s, false).message.find("needs an LLM"), std::string::npos);
  SessionRecord plan = awaiting("plan");
  EXPECT_EQ(titles(hitl_question(plan, true)).front(), "Approve");
}

TEST(HitlDebug, DebugThenRunTheFixThenTheTestOfTheAppliedFix) {
  SessionRecord s = tested_wrong();
  EXPECT_EQ(hitl_decide(s, answer(kDebugThis)), HitlNext::RunPhase);
  EXPECT_EQ(s.phase, HitlPhase::test);
  EXPECT_EQ(hitl_pending_work(s), HitlWork::Debug);
  hitl_record(s, "resumed", "");  // a restart in between runs the debugger again
  EXPECT_EQ(hitl_pending_work(s), HitlWork::Debug);
  EXPECT_EQ(*hitl_debug_report(s), "incorrect: output 0: NaN\n  whole row 5 is NaN");

  hitl_record(s, "fix", "the debugger proposed a fix");
  hitl_record_result(s, "the debugger proposed a fix");
  EXPECT_TRUE(hitl_fix_pending(s));
  EXPECT_EQ(hitl_debug_attempts(s), 1);
  const std::vector<std::string> offered = titles(hitl_question(s, true));
  ASSERT_GE(offered.size(), 2u);
  EXPECT_EQ(offered[0], kRunFix);
  EXPECT_EQ(offered[1], kDebugThis);

  EXPECT_EQ(hitl_decide(s, answer(kRunFix)), HitlNext::RunPhase);
  EXPECT_EQ(hitl_pending_work(s), HitlWork::RunFix);
  hitl_record(s, "applied", "the debugger's fix");
  EXPECT_EQ(hitl_pending_work(s), HitlWork::Phase);  // the test itself runs on the fix
  EXPECT_FALSE(hitl_fix_pending(s));
  EXPECT_FALSE(hitl_debug_report(s).has_value());  // it described the code before the fix
}

TEST(HitlDebug, TheAttemptsOfAPhaseAreBounded) {
  SessionRecord s = tested_wrong();
  for (int i = 0; i < kHitlDebugAttempts; ++i) hitl_record(s, "fix", "a fix");
  hitl_record_result(s, "the debugger proposed a fix");
  const HitlQuestion q = hitl_question(s, true);
  for (const std::string& t : titles(q)) EXPECT_NE(t, kDebugThis);
  EXPECT_EQ(titles(q).front(), kRunFix);  // the last fix can still run
  EXPECT_NE(q.message.find("attempts on this phase are spent"), std::string::npos) << q.message;
  // Entering the phase again starts the count again.
  hitl_decide(s, answer("Approve"));
  EXPECT_EQ(hitl_debug_attempts(s), 0);
}

TEST(PlanItems, ReadsOnlyTickedLines) {
  const std::string plan =
      "# plan\n- [x] autotune: BLOCK_ROWS 8 -> 16\n- [ ] buffering: x\n  * [X] a: b  \n"
      "- [x]\n-[x] no space\n";
  EXPECT_EQ(ticked_plan_items(plan),
            (std::vector<std::string>{"autotune: BLOCK_ROWS 8 -> 16", "a: b"}));
}

TEST(RuleProposer, PlanIsAChecklistThatImplementAppliesInOrder) {
  const std::string code = scale_rows();
  ASSERT_FALSE(code.empty());
  RuleProposer proposer;
  const std::string plan = proposer.plan({code, "_kernel", "keep it small"});
  const std::vector<std::string> items = ticked_plan_items(plan);
  ASSERT_GE(items.size(), 2u) << plan;
  EXPECT_NE(plan.find("> Your feedback: keep it small"), std::string::npos);

  // Nothing ticked: nothing changes.
  std::string unticked = plan;
  for (size_t at; (at = unticked.find("- [x] ")) != std::string::npos;) unticked[at + 3] = ' ';
  const Implementation none = proposer.implement({code, "_kernel", unticked, ""});
  EXPECT_EQ(none.code, code);
  EXPECT_TRUE(none.applied.empty());

  // Only the first item: exactly its change.
  const std::string first_only = "- [x] " + items[0] + "\n";
  const Implementation one = proposer.implement({code, "_kernel", first_only, ""});
  EXPECT_NE(one.code, code);
  EXPECT_EQ(one.applied, std::vector<std::string>{items[0]});

  // The same item twice: the second no longer applies on top of the first.
  const Implementation twice = proposer.implement({code, "_kernel", first_only + first_only, ""});
  EXPECT_EQ(twice.code, one.code);
  EXPECT_EQ(twice.skipped, std::vector<std::string>{items[0]});

  // A line the expander never proposes is skipped, not guessed.
  const Implementation bogus =
      proposer.implement({code, "_kernel", "- [x] autotune: NOPE 1 -> 2\n", ""});
  EXPECT_EQ(bogus.code, code);
  EXPECT_EQ(bogus.skipped.size(), 1u);
}

TEST_F(TempStore, SessionsSurviveReopeningTheDatabase) {
  std::string id;
  {
    SessionStore store(path());
    SessionRecord s = hitl_begin("file:///a/k.py", "_kernel", 7, "print('x')\n");
    s.run_id = "r1";
    id = store.create(s);
    ASSERT_FALSE(id.empty());
    s.id = id;
    hitl_record_result(s, "2 strategies");
    hitl_decide(s, answer("Revise with feedback", "bigger \"blocks\"\nplease"));
    s.plan = "- [x] a: b\n";
    s.proposed = "new\n";
    store.update(s);
  }
  SessionStore reopened(path());
  const std::optional<SessionRecord> s = reopened.get(id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->uri, "file:///a/k.py");
  EXPECT_EQ(s->kernel, "_kernel");
  EXPECT_EQ(s->start_version, 7);
  EXPECT_EQ(s->doc_version, 7);
  EXPECT_EQ(s->phase, HitlPhase::plan);
  EXPECT_EQ(s->status, SessionStatus::running);
  EXPECT_EQ(s->code, "print('x')\n");
  EXPECT_EQ(s->plan, "- [x] a: b\n");
  EXPECT_EQ(s->proposed, "new\n");
  EXPECT_EQ(s->feedback, "bigger \"blocks\"\nplease");
  EXPECT_EQ(s->run_id, "r1");
  ASSERT_EQ(s->history.size(), 3u);
  EXPECT_EQ(s->history[2].event, "feedback");
  EXPECT_EQ(s->history[2].text, "bigger \"blocks\"\nplease");
  EXPECT_FALSE(reopened.get("s-nope"));
  SessionRecord ghost;
  ghost.id = "s-nope";
  EXPECT_THROW(reopened.update(ghost), std::runtime_error);
}

TEST_F(TempStore, ListsNewestFirstBesideTheRunTablesUnderItsOwnSchemaEntry) {
  RunStore runs(path());
  RunRecord run;
  run.mode = "hitl";
  const std::string run_id = runs.create_run(run);
  SessionStore store(path());
  SessionRecord a = hitl_begin("file:///a.py", "ka", 1, "a");
  a.run_id = run_id;
  const std::string first = store.create(a);
  SessionRecord b = hitl_begin("file:///b.py", "kb", 1, "b");
  b.id = "s-second";
  store.create(b);
  const auto sessions = store.list();
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].id, "s-second");
  EXPECT_EQ(sessions[1].id, first);
  EXPECT_EQ(sessions[1].run_id, run_id);
  EXPECT_TRUE(runs.run(run_id));

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db, "SELECT component, version FROM component_schema ORDER BY component",
                         -1, &stmt, nullptr),
      SQLITE_OK);
  std::vector<std::string> rows;
  while (sqlite3_step(stmt) == SQLITE_ROW)
    rows.push_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))) + "=" +
                   std::to_string(sqlite3_column_int(stmt, 1)));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  EXPECT_NE(std::find(rows.begin(), rows.end(), "hitl=1"), rows.end());
  EXPECT_NE(std::find(rows.begin(), rows.end(), "runs=1"), rows.end());
}

TEST_F(TempStore, AnUnopenableStoreIsAClearError) {
  fs::create_directories(path());  // a directory where the file should be
  try {
    SessionStore store(path());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path().string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mk::agents
