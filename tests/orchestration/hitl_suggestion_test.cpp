// What the step-by-step profile phase suggests next, from constructed diagnoses: each bound maps
// to the phase that applies the families answering_strategies names; near the roofline it is to
// accept; unknown suggests nothing. Then the question that offers it first, the answer to its
// marked title, the suggestion and diagnosis kept in the session's history, and a plan ordered
// by the diagnosis (the rule proposer on a real kernel file).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/orchestration/hitl_session.h"
#include "agents/orchestration/hitl_suggestion.h"

namespace mk::agents {
namespace {

Diagnosis hs_bound(const std::string& bound, std::optional<double> fraction = 0.2) {
  Diagnosis d;
  d.bound = bound;
  d.summary = bound + "-bound";
  d.roofline_fraction = fraction;
  return d;
}

Diagnosis hs_refetching() {
  Diagnosis d = hs_bound("HBM");
  Refetch r;
  r.operand = "b_ref";
  r.kernel = "_matmul";
  r.ratio = 8;
  r.along_axes = {0};
  d.refetches.push_back(r);
  d.summary = "HBM-bound: b_ref re-fetched 8x along grid axis 0";
  return d;
}

std::vector<std::string> hs_titles(const HitlQuestion& q) {
  std::vector<std::string> out;
  for (const HitlAction& a : q.actions) out.push_back(a.title);
  return out;
}

TEST(HitlSuggestion, AReFetchedOperandAsksAutotuneForLargerBlocks) {
  const auto s = suggest_next_phase(hs_refetching());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->phase, HitlPhase::autotune);
  EXPECT_NE(s->why.find("b_ref re-fetched 8x along grid axis 0"), std::string::npos) << s->why;
  EXPECT_NE(s->why.find("larger blocks fetch b_ref fewer times"), std::string::npos) << s->why;
}

TEST(HitlSuggestion, GridOverheadAsksAutotuneForFewerLargerSteps) {
  const auto s = suggest_next_phase(hs_bound("grid overhead"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->phase, HitlPhase::autotune);
  EXPECT_NE(s->why.find("fewer, larger grid steps"), std::string::npos) << s->why;
}

TEST(HitlSuggestion, RewritesThatOnlyAPlanAppliesAskForAPlanNamingThem) {
  // Over VMEM: an f32 accumulator, buffering and smaller blocks (the families, in their order).
  const auto vmem = suggest_next_phase(hs_bound("VMEM"));
  ASSERT_TRUE(vmem);
  EXPECT_EQ(vmem->phase, HitlPhase::plan);
  EXPECT_NE(vmem->why.find("accumulator_f32, buffering, block_sizes and autotune"),
            std::string::npos)
      << vmem->why;
  const auto compute = suggest_next_phase(hs_bound("compute"));
  ASSERT_TRUE(compute);
  EXPECT_EQ(compute->phase, HitlPhase::plan);
  EXPECT_NE(compute->why.find("dimension_semantics"), std::string::npos) << compute->why;
  // HBM-bound without a re-fetch: no block direction is known, so no autotune shortcut.
  const auto hbm = suggest_next_phase(hs_bound("HBM"));
  ASSERT_TRUE(hbm);
  EXPECT_EQ(hbm->phase, HitlPhase::plan);
  EXPECT_NE(hbm->why.find("block_sizes, buffering and autotune"), std::string::npos) << hbm->why;
}

TEST(HitlSuggestion, NearTheRooflineSuggestsAcceptingUnlessItDoesNotFit) {
  const auto near = suggest_next_phase(hs_bound("HBM", kNearRooflineFraction));
  ASSERT_TRUE(near);
  EXPECT_FALSE(near->phase);
  EXPECT_NE(near->why.find("80% of the roofline"), std::string::npos) << near->why;
  const auto below = suggest_next_phase(hs_bound("HBM", kNearRooflineFraction - 0.01));
  ASSERT_TRUE(below);
  EXPECT_EQ(below->phase, HitlPhase::plan);
  // Over the VMEM budget it does not fit, however close its predicted time is.
  EXPECT_EQ(suggest_next_phase(hs_bound("VMEM", 0.95))->phase, HitlPhase::plan);
}

TEST(HitlSuggestion, AnUnknownBoundSuggestsNothing) {
  EXPECT_FALSE(suggest_next_phase(hs_bound("unknown")));
  EXPECT_FALSE(suggest_next_phase(Diagnosis{}));
}

SessionRecord hs_profiled(const std::optional<HitlSuggestion>& suggestion) {
  SessionRecord s = hitl_begin("file:///k.py", "_matmul", 3, "code");
  s.phase = HitlPhase::profile;
  hitl_record_result(s, "profile on local (host events): 99.9% of the time in Pallas kernels",
                     suggestion);
  return s;
}

TEST(HitlSuggestion, TheQuestionOffersTheSuggestedPhaseFirstOfTheNextPhasesWithWhy) {
  const SessionRecord s = hs_profiled(suggest_next_phase(hs_refetching()));
  const HitlQuestion q = hitl_question(s);
  EXPECT_NE(q.message.find(". Suggested next: autotune (HBM-bound: b_ref re-fetched 8x"),
            std::string::npos)
      << q.message;
  EXPECT_TRUE(q.message.ends_with(". Next?")) << q.message;
  const std::vector<std::string> titles = hs_titles(q);
  const auto first_jump = std::find_if(titles.begin(), titles.end(), [](const std::string& t) {
    return t.starts_with("Next phase: ");
  });
  ASSERT_NE(first_jump, titles.end());
  EXPECT_EQ(*first_jump, "Next phase: autotune (suggested)");
  EXPECT_EQ(std::count_if(titles.begin(), titles.end(),
                          [](const std::string& t) { return t.find("autotune") != t.npos; }),
            1);
  EXPECT_EQ(titles.front(), "Approve");
  // The marked title answers like the plain one.
  const HitlAnswer a = hitl_answer_from_title(*first_jump, "");
  EXPECT_EQ(a.kind, HitlAnswer::Kind::GoTo);
  EXPECT_EQ(a.phase, HitlPhase::autotune);
}

TEST(HitlSuggestion, AcceptingNamesApproveAndMarksNoPhase) {
  const SessionRecord s = hs_profiled(suggest_next_phase(hs_bound("compute", 0.9)));
  const HitlQuestion q = hitl_question(s);
  EXPECT_NE(q.message.find("Suggested next: accept (at 90% of the roofline"), std::string::npos)
      << q.message;
  EXPECT_NE(q.message.find("Approve accepts the kernel"), std::string::npos) << q.message;
  const std::vector<std::string> titles = hs_titles(q);
  EXPECT_EQ(titles.front(), "Approve");
  EXPECT_EQ(std::count_if(titles.begin(), titles.end(),
                          [](const std::string& t) { return t.ends_with("(suggested)"); }),
            0);
}

TEST(HitlSuggestion, OnlyTheLatestResultCarriesItsSuggestion) {
  SessionRecord s = hs_profiled(suggest_next_phase(hs_refetching()));
  ASSERT_TRUE(hitl_pending_suggestion(s));
  hitl_record(s, "resumed", "");  // asked again on resume: still the same question
  EXPECT_EQ(hitl_pending_suggestion(s)->phase, HitlPhase::autotune);
  ASSERT_EQ(hitl_decide(s, hitl_answer_from_title("Next phase: autotune (suggested)", "")),
            HitlNext::RunPhase);
  hitl_record_result(s, "no move beats the current configuration");
  EXPECT_FALSE(hitl_pending_suggestion(s));
  EXPECT_EQ(hitl_question(s).message.find("Suggested"), std::string::npos);
  // A profile without a suggestion (unknown bound) offers the plain question.
  EXPECT_FALSE(hitl_pending_suggestion(hs_profiled(std::nullopt)));
}

TEST(HitlSuggestion, TheDiagnosisDescribesTheCodeUntilAnEditIsApplied) {
  SessionRecord s = hs_profiled(std::nullopt);
  EXPECT_FALSE(hitl_current_diagnosis(s));
  hitl_record_diagnosis(s, hs_refetching());
  hitl_record(s, "result", "profiled");
  auto d = hitl_current_diagnosis(s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->bound, "HBM");
  ASSERT_EQ(d->refetches.size(), 1u);
  EXPECT_EQ(d->refetches[0].operand, "b_ref");
  hitl_record(s, "rejected", "rejected");  // the code did not change
  EXPECT_TRUE(hitl_current_diagnosis(s));
  hitl_record(s, "applied", "autotune: BLOCK_M 128 -> 256");
  EXPECT_FALSE(hitl_current_diagnosis(s));
}

std::string hs_kernel(const char* name) {
  std::ifstream in(std::filesystem::path(MK_SOURCE_DIR) / "tests/optimize/kernels" / name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(HitlSuggestion, APlanWithTheDiagnosisTicksWhatAnswersItFirst) {
  RuleProposer proposer;
  PlanRequest request{hs_kernel("matmul_over_vmem.py"), "_matmul", "", std::nullopt};
  const std::string plain = proposer.plan(request);
  EXPECT_EQ(plain.find("- [ ] "), std::string::npos) << plain;  // without one: all ticked
  Diagnosis vmem = hs_bound("VMEM");
  vmem.summary = "over the VMEM budget: 69206016 bytes per step of 16777216";
  request.diagnosis = vmem;
  const std::string md = proposer.plan(request);
  EXPECT_NE(md.find("Ordered by the last profile's diagnosis: over the VMEM budget"),
            std::string::npos)
      << md;
  // Ticked lines come first; the first is a smaller block (the VMEM direction), and every
  // ticked line is of a family that answers VMEM.
  const std::vector<std::string> ticked = ticked_plan_items(md);
  ASSERT_FALSE(ticked.empty()) << md;
  const size_t first_unticked = md.find("- [ ] ");
  ASSERT_NE(first_unticked, std::string::npos) << md;
  EXPECT_LT(md.find("- [x] " + ticked.back()), first_unticked) << md;
  for (const std::string& item : ticked) {
    const std::string family = item.substr(0, item.find(':'));
    EXPECT_TRUE(family == "accumulator_f32" || family == "buffering" || family == "block_sizes" ||
                family == "autotune")
        << item;
  }
  bool saw_block_move = false;
  for (const std::string& item : ticked) {
    const auto arrow = item.find(" -> ");
    if (arrow == std::string::npos) continue;
    const auto space = item.rfind(' ', arrow - 1);
    const double from = std::stod(item.substr(space + 1, arrow - space - 1));
    const double to = std::stod(item.substr(arrow + 4));
    EXPECT_LT(to, from) << item;
    saw_block_move = true;
  }
  EXPECT_TRUE(saw_block_move) << md;
}

}  // namespace
}  // namespace mk::agents
