// The LLM expander's Profile analyst over a scripted client: it reads the parent's numbers and
// rule diagnosis, its answer goes into the Planner's prompt, it is asked once per parent (the
// answer is recorded on the node and reused, also by a resumed run), its usage is paid for like
// the other calls, and a failure (garbage twice, a rate limit) leaves the Planner the rule
// diagnosis while cancellation, the budget and a rejected key still stop the expansion. No
// worker.
#include "agents/orchestration/llm_expander.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agents/orchestration/graph_search.h"
#include "agents/orchestration/run_lessons.h"
#include "knowledge/store.h"
#include "knowledge/time_model.h"
#include "tests/agents/scripted_client.h"

namespace mk::agents {
namespace {

using nlohmann::json;
using testing::ScriptedClient;

std::string le_kernel(int block) {
  return "import jax\nfrom jax.experimental import pallas as pl\n\nBLOCK = " +
         std::to_string(block) +
         "\n\n\ndef _k(x_ref, o_ref):\n    o_ref[...] = x_ref[...] * 2.0\n\n\ndef candidate(x):\n"
         "    spec = pl.BlockSpec((BLOCK, 256), lambda i: (i, 0))\n"
         "    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),\n"
         "                          grid=(4096 // BLOCK,), in_specs=[spec], out_specs=spec)(x)\n";
}

std::string le_python(const std::string& code) {
  return "```python\n" + code + "```";
}

const std::string kAnalystAnswer =
    "```json\n{\"bottleneck\": \"grid_overhead\", \"evidence\": \"EVIDENCE-4096: 4096 steps of "
    "0.35 us dwarf the 1 us of HBM traffic.\", \"next_strategies\": [{\"name\": "
    "\"taller_row_blocks\", \"why\": \"Fewer grid steps.\", \"expected_effect\": \"8x less "
    "overhead\"}]}\n```";

std::string le_plan(const std::string& name) {
  return "```json\n{\"strategies\": [{\"name\": \"" + name +
         "\", \"why\": \"Taller blocks, fewer steps.\", \"expected_effect\": \"less overhead\"}]}"
         "\n```";
}

// Metrics of a grid-overhead-bound kernel, as the worker and the time model give them.
json le_metrics() {
  return {
      {"time_kind", "predicted"},
      {"pallas_calls",
       {{{"kernel", "_k"},
         {"grid", {4096}},
         {"vmem_bytes_per_step", 8192},
         {"traffic", {{"available", true}, {"hbm_bytes_read", 4 << 20}, {"grid_steps", 4096}}}}}},
      {"predictions",
       {{{"compute_s", 1e-7},
         {"memory_s", 1e-6},
         {"overhead_s", 1.4e-3},
         {"predicted_s", 1.4011e-3}}}}};
}

Diagnosis le_diagnosis() {
  return diagnose(le_metrics(), 1.4e-3, *knowledge::find_tpu_generation("v5e"));
}

std::string le_sent(const llm::ChatRequest& request) {
  std::string all;
  for (const auto& m : request.messages) all += m.text + "\n";
  return all;
}

int64_t le_input_tokens(const std::vector<llm::ChatRequest>& requests) {
  int64_t total = 0;  // what ScriptedClient charges: the request's characters / 4
  for (const auto& r : requests)
    for (const auto& m : r.messages) total += static_cast<int64_t>(m.text.size() / 4);
  return total;
}

// The parent as the search keeps it: its metrics, where record_analysis writes.
struct LeParent {
  json metrics = le_metrics();
  int recorded = 0;

  ExpansionRequest request(bool with_diagnosis = true) {
    ExpansionRequest r;
    r.parent_code = le_kernel(8);
    r.known_hashes.insert(candidate_hash(r.parent_code));
    r.max_children = 1;
    r.parent_metrics = NodeMetrics::from_json(metrics);
    if (with_diagnosis) r.diagnosis = le_diagnosis();
    r.record_analysis = [this](const json& analysis) {
      metrics["analysis"] = analysis;
      ++recorded;
    };
    return r;
  }
};

LlmExpanderOptions le_options() {
  LlmExpanderOptions o;
  o.target_facts = "TPU v5e";
  o.fall_back_to_rules = false;
  return o;
}

std::vector<std::string> le_purposes(const std::vector<llm::ChatRequest>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests) out.push_back(r.purpose);
  return out;
}

TEST(LlmExpanderAutotuner, WidensTheDerivedSpaceForTheAutotunePhaseAndIsPaidFor) {
  // 2048 rows divide 4096 and are a multiple of 8; 100 is neither.
  ScriptedClient client({"```json\n{\"extra_values\": {\"BLOCK\": [2048, 100]}}\n```"});
  LlmExpander expander(client, le_options());
  const auto space =
      expander.tuning_space(le_kernel(256), "", "grid overhead-bound (12% of the roofline)", 8, {});
  ASSERT_TRUE(space && space->ok()) << (space ? space->error : "none");
  EXPECT_EQ(space->llm_values_added, 1);
  EXPECT_EQ(space->llm_values_rejected, 1);
  const json values = space->worker_space["BLOCK"];
  EXPECT_EQ(values[0], 256);
  EXPECT_NE(std::find(values.begin(), values.end(), 2048), values.end());
  EXPECT_GT(space->usage.input_tokens, 0);
  ASSERT_EQ(le_purposes(client.requests), std::vector<std::string>{"autotuner"});
  EXPECT_NE(client.requests[0].messages[1].text.find("grid overhead-bound (12% of the roofline)"),
            std::string::npos);
}

TEST(LlmExpanderAnalyst, ReadsTheParentsNumbersAndItsAnswerGoesIntoThePlannersPrompt) {
  ScriptedClient client({kAnalystAnswer, le_plan("row_block_64"), le_python(le_kernel(64))});
  LlmExpander expander(client, le_options());
  LeParent parent;
  const std::vector<Proposal> out = expander.expand(parent.request());

  ASSERT_EQ(le_purposes(client.requests),
            (std::vector<std::string>{"profile_analyst", "planner", "implementer"}));
  const Diagnosis d = le_diagnosis();
  ASSERT_EQ(d.bound, "grid overhead");
  // The analyst was sent the parent's numbers and the rule diagnosis.
  const std::string analyst = le_sent(client.requests[0]);
  EXPECT_NE(analyst.find("pallas_call `_k`: grid (4096,)"), std::string::npos) << analyst;
  EXPECT_NE(analyst.find("grid-step overhead 1400 us"), std::string::npos) << analyst;
  EXPECT_NE(analyst.find("## Rule-based diagnosis\n" + d.summary), std::string::npos) << analyst;
  EXPECT_NE(analyst.find("## Device profile\n(none)"), std::string::npos);
  // The planner got both in its diagnosis section: the rule diagnosis and the analyst's answer.
  const std::string planner = le_sent(client.requests[1]);
  const size_t section = planner.find("## Diagnosis: what limits this kernel");
  ASSERT_NE(section, std::string::npos) << planner;
  const size_t rule = planner.find(d.summary, section);
  const size_t evidence = planner.find("Profile analyst: bottleneck grid_overhead. EVIDENCE-4096");
  const size_t knowledge = planner.find("## Knowledge", section);
  EXPECT_LT(section, rule);
  EXPECT_LT(rule, evidence);
  EXPECT_LT(evidence, knowledge);
  EXPECT_NE(planner.find("- taller_row_blocks: Fewer grid steps. (expected: 8x less overhead)"),
            std::string::npos);

  // The answer is recorded on the parent, and the child says which diagnosis it answers.
  EXPECT_EQ(parent.recorded, 1);
  EXPECT_EQ(parent.metrics["analysis"].value("bottleneck", ""), "grid_overhead");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].strategy, "llm:row_block_64");
  EXPECT_EQ(out[0].answers,
            d.summary + "; profile analyst: grid_overhead -> Taller blocks, fewer steps.");
  // The analyst's call is paid for with the others, on the first child.
  EXPECT_EQ(out[0].usage.input_tokens, le_input_tokens(client.requests));
}

TEST(LlmExpanderAnalyst, SeesTheDeviceProfileWhenTheParentHasOne) {
  ScriptedClient client({kAnalystAnswer, le_plan("row_block_64"), le_python(le_kernel(64))});
  LlmExpander expander(client, le_options());
  LeParent parent;
  parent.metrics["time_kind"] = "device";
  parent.metrics["timing"] = {{"candidate", {{"device", {{"median_s", 1.25e-3}}}}}};
  parent.metrics["profile"] = {
      {"summary",
       {{"measured", "device"},
        {"op_time_per_run_us", 1300.0},
        {"pallas_share", 0.8},
        {"kernels", {{{"kernel", "_k"}, {"per_run_us", 1040.0}, {"share", 0.8}}}},
        {"top_ops", {{{"op", "fusion.3"}, {"time_us", 260.0}}}},
        {"note", "Device op events of the profiled program."}}}};
  ASSERT_EQ(expander.expand(parent.request()).size(), 1u);
  const std::string analyst = le_sent(client.requests[0]);
  EXPECT_NE(analyst.find("scored by: measured on the device\nmeasured device time: median 1250 us"),
            std::string::npos)
      << analyst;
  EXPECT_NE(analyst.find("## Device profile\nmeasured: device; op time per run 1300 us; share in "
                         "Pallas kernels 80.0%\n- kernel _k: 1040 us per run (80.0%)\n"
                         "- op fusion.3: 260 us\nDevice op events of the profiled program."),
            std::string::npos)
      << analyst;
}

TEST(LlmExpanderAnalyst, IsAskedOncePerParentAndItsRecordedAnswerReachesEveryPlanner) {
  ScriptedClient client({kAnalystAnswer, le_plan("row_block_64"), le_python(le_kernel(64)),
                         le_plan("row_block_128"), le_python(le_kernel(128))});
  LlmExpander expander(client, le_options());
  LeParent parent;
  ASSERT_EQ(expander.expand(parent.request()).size(), 1u);
  ExpansionRequest again = parent.request();  // now with the recorded analysis in its metrics
  again.known_hashes.insert(candidate_hash(le_kernel(64)));
  const std::vector<Proposal> second = expander.expand(again);

  EXPECT_EQ(le_purposes(client.requests),
            (std::vector<std::string>{"profile_analyst", "planner", "implementer", "planner",
                                      "implementer"}));
  EXPECT_EQ(parent.recorded, 1);
  EXPECT_NE(le_sent(client.requests[3]).find("EVIDENCE-4096"), std::string::npos);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0].answers.find("profile analyst: grid_overhead"), std::string::npos);
}

TEST(LlmExpanderAnalyst, GarbageTwiceLeavesThePlannerTheRuleDiagnosisAndIsPaidFor) {
  ScriptedClient client({"The kernel is slow.", "{\"bottleneck\": 7}", le_plan("row_block_64"),
                         le_python(le_kernel(64))});
  LlmExpander expander(client, le_options());
  LeParent parent;
  const std::vector<Proposal> out = expander.expand(parent.request());

  ASSERT_EQ(
      le_purposes(client.requests),
      (std::vector<std::string>{"profile_analyst", "profile_analyst", "planner", "implementer"}));
  const std::string planner = le_sent(client.requests[2]);
  EXPECT_NE(planner.find(le_diagnosis().summary), std::string::npos) << planner;
  EXPECT_NE(planner.find("Profile analyst: no answer (the profile_analyst answered in the wrong "
                         "format twice"),
            std::string::npos)
      << planner;
  // The failure is recorded too: a later expansion does not pay for it again.
  EXPECT_EQ(parent.recorded, 1);
  EXPECT_NE(parent.metrics["analysis"].value("error", "").find("wrong format twice"),
            std::string::npos);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].answers, le_diagnosis().summary + " -> Taller blocks, fewer steps.");
  EXPECT_EQ(out[0].usage.input_tokens, le_input_tokens(client.requests));
}

// Fails every profile_analyst call with `kind`; the rest go to the script.
class AnalystFailsClient : public llm::Client {
 public:
  AnalystFailsClient(llm::ErrorKind kind, std::vector<std::string> answers)
      : script_(std::move(answers)), kind_(kind) {}
  llm::ChatResponse complete(const llm::ChatRequest& request, const llm::StreamSink& sink,
                             const llm::CancelFlag& cancelled) override {
    purposes.push_back(request.purpose);
    if (request.purpose == "profile_analyst")
      throw llm::LlmError(kind_, "openai is rate limiting (HTTP 429) after 4 attempts");
    return script_.complete(request, sink, cancelled);
  }
  std::string describe() const override { return "analyst fails"; }
  std::vector<std::string> purposes;
  ScriptedClient script_;

 private:
  llm::ErrorKind kind_;
};

TEST(LlmExpanderAnalyst, ARateLimitedAnalystDoesNotStopTheExpansion) {
  AnalystFailsClient client(llm::ErrorKind::RateLimited,
                            {le_plan("row_block_64"), le_python(le_kernel(64))});
  LlmExpander expander(client, le_options());
  LeParent parent;
  const std::vector<Proposal> out = expander.expand(parent.request());
  EXPECT_EQ(client.purposes,
            (std::vector<std::string>{"profile_analyst", "planner", "implementer"}));
  EXPECT_EQ(out.size(), 1u);
  const std::string planner = le_sent(client.script_.requests[0]);
  EXPECT_NE(planner.find("Profile analyst: no answer (its call failed: rate-limited"),
            std::string::npos)
      << planner;
}

TEST(LlmExpanderAnalyst, CancellationTheBudgetAndARejectedKeyStillStopTheExpansion) {
  for (const auto kind :
       {llm::ErrorKind::BudgetExceeded, llm::ErrorKind::Cancelled, llm::ErrorKind::BadKey}) {
    AnalystFailsClient client(kind, {le_plan("row_block_64"), le_python(le_kernel(64))});
    LlmExpander expander(client, le_options());
    LeParent parent;
    EXPECT_THROW(expander.expand(parent.request()), llm::LlmError);
    EXPECT_EQ(client.purposes, std::vector<std::string>{"profile_analyst"});
    EXPECT_EQ(parent.recorded, 0);  // nothing to reuse: the next session asks again
  }
}

TEST(LlmExpanderAnalyst, WithoutADiagnosisNoAnalystIsAskedAndNothingIsAnswered) {
  ScriptedClient client({le_plan("row_block_64"), le_python(le_kernel(64))});
  LlmExpander expander(client, le_options());
  LeParent parent;
  const std::vector<Proposal> out = expander.expand(parent.request(/*with_diagnosis=*/false));
  EXPECT_EQ(le_purposes(client.requests), (std::vector<std::string>{"planner", "implementer"}));
  EXPECT_NE(le_sent(client.requests[0])
                .find("## Diagnosis: what limits this kernel "
                      "(rule-based, and the profile analyst's reading)\n"
                      "(none)"),
            std::string::npos);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].answers, "");
}

// --- In a search: the analysis lives on the parent's node in the run store. -------------------

// Scores a candidate by its BLOCK (the root's 8 is the fastest, so greedy expands it again);
// every verdict carries le_metrics() for the diagnosis.
class LeEvaluator final : public Evaluator {
 public:
  LeEvaluator() : target_(*knowledge::find_tpu_generation("v5e")) {}
  Evaluation evaluate(const std::string& source, const std::function<bool()>&) override {
    Evaluation e;
    e.status = NodeStatus::correct;
    e.time_kind = "predicted";
    e.metrics = le_metrics();
    e.score_s = source == le_kernel(8) ? 1.4e-3 : 2e-3;
    return e;
  }
  Evaluation evaluate_reference(const std::function<bool()>&) override { return {}; }
  std::string lowering_error(const std::string&, const std::function<bool()>&) override {
    return "";
  }
  const knowledge::TpuGeneration& target() const override { return target_; }

 private:
  const knowledge::TpuGeneration& target_;
};

class LlmExpanderSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("mk-llm-expander-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store_.emplace(dir_ / "store.sqlite");
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string create_run(int iterations) {
    RunRecord r;
    r.mode = "auto";
    r.strategy = "greedy";
    r.file = "/tmp/kernel.py";
    r.target = "v5e";
    r.host = "local";
    r.llm = "scripted";
    r.params.search.strategy = "greedy";
    r.params.search.branches = 1;
    r.budget.iterations = iterations;
    return store_->create_run(r);
  }
  std::filesystem::path dir_;
  std::optional<RunStore> store_;
};

TEST_F(LlmExpanderSearchTest, AResumedRunReusesTheAnalysisRecordedOnTheParent) {
  LeEvaluator evaluator;
  const std::string id = create_run(1);
  {
    ScriptedClient client({kAnalystAnswer, le_plan("row_block_64"), le_python(le_kernel(64))});
    LlmExpander expander(client, le_options());
    const RunRecord run = GraphSearch(*store_, evaluator, expander, id).run(le_kernel(8));
    EXPECT_EQ(run.stop_reason, "budget: 1 iterations");
    EXPECT_EQ(le_purposes(client.requests),
              (std::vector<std::string>{"profile_analyst", "planner", "implementer"}));
  }
  const std::vector<NodeRecord> nodes = store_->nodes(id);
  ASSERT_EQ(nodes.size(), 2u);
  const NodeMetrics& root = nodes[0].metrics;
  EXPECT_EQ(root.analysis.value("bottleneck", ""), "grid_overhead");
  ASSERT_TRUE(root.bottleneck);
  EXPECT_EQ(root.bottleneck->bound, "grid overhead");  // the rule's, kept
  EXPECT_NE(nodes[1].metrics.answers.find("profile analyst"), std::string::npos);
  // Every call of the expansion, the analyst's too, is in the child's and the run's cost.
  const int64_t child_tokens = nodes[1].cost.tokens_in;
  EXPECT_GT(child_tokens, 0);
  EXPECT_EQ(store_->run(id)->cost.tokens_in, child_tokens);

  // A later session of the same run (more rounds): the root is still the best and is expanded
  // again; its recorded analysis goes to the planner without another analyst call.
  RunRecord more = *store_->run(id);
  more.budget.iterations = 2;
  store_->update_run(more);
  ScriptedClient client({le_plan("row_block_128"), le_python(le_kernel(128))});
  LlmExpander expander(client, le_options());
  GraphSearch(*store_, evaluator, expander, id).run(le_kernel(8));
  EXPECT_EQ(le_purposes(client.requests), (std::vector<std::string>{"planner", "implementer"}));
  EXPECT_NE(le_sent(client.requests[0]).find("EVIDENCE-4096"), std::string::npos);
  EXPECT_EQ(store_->nodes(id).size(), 3u);
}

}  // namespace
// A candidate that lowers but gives wrong numbers goes to the debugger with the report, the
// same path as a lowering error; the fix that turns it right is kept (record_fix) and named.
TEST(LlmExpanderDebugger, RepairsAWrongResultFromTheCorrectnessReportAndKeepsTheFix) {
  const std::string report =
      "incorrect: seed 7: output 0: 512 of 4096 elements outside rtol=1e-05\n\nCorrectness "
      "report (seed 7, candidate first; inputs (4096, 256)):\n  pattern (blocks): the output "
      "block is (64, 256); along axis 0 the wrong region starts and ends on block edges";
  ScriptedClient client({le_plan("row_block_64"), le_python(le_kernel(64)),
                         "The last block is skipped.\n\n" + le_python(le_kernel(32)) + "\nDone."});
  LlmExpanderOptions o = le_options();
  int checks = 0;
  o.candidate_error = [&](const std::string& source, const std::function<bool()>&) {
    ++checks;
    return source == le_kernel(64) ? report : std::string();
  };
  std::vector<std::pair<std::string, std::string>> fixes;
  o.record_fix = [&](const std::string& failure, const std::string& fix) {
    fixes.emplace_back(failure, fix);
  };
  LlmExpander expander(client, o);
  LeParent parent;
  const std::vector<Proposal> out = expander.expand(parent.request(false));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].code, le_kernel(32));
  EXPECT_NE(out[0].description.find("(wrong result fixed by the debugger in 1 attempt)"),
            std::string::npos)
      << out[0].description;
  ASSERT_EQ(le_purposes(client.requests),
            (std::vector<std::string>{"planner", "implementer", "debugger"}));
  const std::string sent = le_sent(client.requests[2]);
  EXPECT_NE(sent.find("along axis 0 the wrong region starts and ends on block edges"),
            std::string::npos);
  EXPECT_NE(sent.find("BLOCK = 64"), std::string::npos);  // the failing file
  EXPECT_EQ(checks, 2);  // the implementer's file, then the fix (right: no second attempt)
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_EQ(fixes[0].first, report);
  EXPECT_NE(fixes[0].second.find("BLOCK = 32"), std::string::npos);
}

// The fixed pattern becomes a lesson that later prompts of the class get back.
TEST(LlmExpanderDebugger, AFixedWrongResultIsALessonForLaterPlans) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("mk_debug_lesson_" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(path);
  {
    knowledge::Store store(path);
    const std::string kept = record_debug_lesson(
        store, "matmul", "v5e",
        "incorrect: seed 1: ...\n\nCorrectness report (seed 1, ...):\n  pattern (rows): rows "
        "128..255 (128 of 256) are wrong\n  pattern (blocks): the output block is (128, 128)",
        "@pl.when(pl.program_id(1) == 0)");
    EXPECT_NE(kept.find("rows: rows 128..255"), std::string::npos) << kept;
    const std::vector<std::string> passages = lesson_passages(store, "matmul", "v5e", 3);
    ASSERT_EQ(passages.size(), 1u);
    EXPECT_EQ(passages[0],
              "Lesson from an earlier run on a matmul kernel (v5e): a wrong result (rows: rows "
              "128..255 (128 of 256) are wrong; blocks: the output block is (128, 128)) was fixed "
              "by changing: @pl.when(pl.program_id(1) == 0).");
    EXPECT_TRUE(lesson_passages(store, "softmax", "v5e", 3).empty());
  }
  std::filesystem::remove(path);
}

}  // namespace mk::agents
