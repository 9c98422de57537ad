// The root of a search that starts from a plain JAX reference: the templates' kernels first, then
// (only with an LLM expander) the LLM's kernels written from the reference in the room left, with
// the from-reference prompts, the debugger on lowering errors, no rule fallback and the usage on
// the LLM's first child. Over a scripted client; no worker.
#include "agents/orchestration/reference_expander.h"

#include <gtest/gtest.h>

#include "agents/orchestration/llm_expander.h"
#include "agents/orchestration/rule_expander.h"
#include "tests/agents/scripted_client.h"

namespace mk::agents {
namespace {

using testing::ScriptedClient;

const char* kReference =
    "import jax\nimport jax.numpy as jnp\n\n\ndef reference(x):\n    return jnp.cumsum(x, axis=-1)"
    "\n\n\ndef make_inputs(key):\n    return (jax.random.normal(key, (64, 256)),)\n";

std::string kernel(int block) {
  return "import jax\nfrom jax.experimental import pallas as pl\n\nBLOCK = " +
         std::to_string(block) +
         "\n\n\ndef _k(x_ref, o_ref):\n    o_ref[...] = x_ref[...]\n\n\ndef candidate(x):\n"
         "    spec = pl.BlockSpec((BLOCK, 256), lambda i: (i, 0))\n"
         "    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),\n"
         "                          grid=(64 // BLOCK,), in_specs=[spec], out_specs=spec)(x)\n";
}

std::string python_answer(const std::string& code) {
  return "```python\n" + code + "```";
}

const std::string kPlan =
    "```json\n{\"strategies\": [{\"name\": \"row_tiles\", \"why\": \"Rows stream once.\","
    " \"expected_effect\": \"one pass\"}, {\"name\": \"column_tiles\", \"why\": \"Small blocks.\","
    " \"expected_effect\": \"more steps\"}]}\n```";

Proposal template_kernel() {
  Proposal p;
  p.code = kernel(64);
  p.strategy = "generated:rowwise";
  p.description = "the template's kernel";
  return p;
}

ExpansionRequest root_request(size_t max_children, llm::Usage* unattributed) {
  ExpansionRequest r;
  r.parent_code = kReference;
  r.parent_is_reference = true;
  r.max_children = max_children;
  r.unattributed_usage = unattributed;
  r.known_hashes.insert(candidate_hash(kReference));
  return r;
}

std::string sent(const llm::ChatRequest& request) {
  std::string all;
  for (const auto& m : request.messages) all += m.text + "\n";
  return all;
}

LlmExpanderOptions options() {
  LlmExpanderOptions o;
  o.task = {{"form", "infile"}, {"path", "/tmp/cumsum.py"}};
  o.task_summary = o.task.dump();
  o.target_facts = "TPU v5e";
  // A 12-row block breaks the (8, 128) rule, as the worker's lowering would say.
  o.candidate_error = [](const std::string& source, const std::function<bool()>&) -> std::string {
    return source.find("BLOCK = 12\n") != std::string::npos
               ? "lowering: block shape (12, 256) is not divisible by 8 and 128 (line 4)"
               : "";
  };
  return o;
}

TEST(ReferenceStartExpander, WithoutAnLlmOnlyTheTemplatesKernelsGrowFromTheReference) {
  RuleExpander rules;
  ReferenceStartExpander start({template_kernel()}, rules);
  llm::Usage unattributed;
  const std::vector<Proposal> out = start.expand(root_request(5, &unattributed));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].strategy, "generated:rowwise");
  // Once the template's kernel is a node, the root is exhausted: the rules are never asked.
  ExpansionRequest again = root_request(5, &unattributed);
  again.known_hashes.insert(candidate_hash(template_kernel().code));
  EXPECT_TRUE(start.expand(again).empty());
  // Any other node goes to the run's expander.
  ExpansionRequest child;
  child.parent_code = template_kernel().code;
  child.max_children = 3;
  EXPECT_FALSE(start.expand(child).empty());
}

TEST(ReferenceStartExpander, TheLlmWritesFromTheReferenceInTheRoomTheTemplatesLeave) {
  ScriptedClient client(
      {kPlan, python_answer(kernel(12)), python_answer(kernel(16)), python_answer(kernel(32))});
  LlmExpander llm(client, options());
  ReferenceStartExpander start({template_kernel()}, llm);
  llm::Usage unattributed;
  const std::vector<Proposal> out = start.expand(root_request(2, &unattributed));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].strategy, "generated:rowwise");
  EXPECT_EQ(out[1].strategy, "llm:row_tiles");
  EXPECT_EQ(out[1].code, kernel(16));  // the debugger's fix, not the 12-row block
  EXPECT_NE(out[1].description.find("lowering fixed by the debugger in 1 attempt"),
            std::string::npos);
  // One design implemented (room 1), the debugger once; the second design is never asked for.
  ASSERT_EQ(client.requests.size(), 3u);
  EXPECT_EQ(client.requests[0].purpose, "planner_from_reference");
  EXPECT_EQ(client.requests[1].purpose, "implementer_from_reference");
  EXPECT_EQ(client.requests[2].purpose, "debugger");
  for (size_t i : {0, 1}) {
    const std::string text = sent(client.requests[i]);
    EXPECT_NE(text.find("return jnp.cumsum(x, axis=-1)"), std::string::npos) << i;
    EXPECT_NE(text.find(template_kernel().code), std::string::npos) << i;
    EXPECT_NE(text.find("a function `candidate`"), std::string::npos) << i;
  }
  EXPECT_NE(sent(client.requests[1]).find("row_tiles: Rows stream once."), std::string::npos);
  EXPECT_NE(sent(client.requests[2]).find("not divisible by 8 and 128 (line 4)"),
            std::string::npos);
  // All three calls' usage is on the LLM's child; none on the template's, none unattributed.
  EXPECT_EQ(out[0].usage.input_tokens, 0);
  EXPECT_GT(out[1].usage.input_tokens, 0);
  EXPECT_EQ(unattributed.input_tokens, 0);
}

TEST(ReferenceStartExpander, TemplatesThatFillTheRoomLeaveTheLlmUnasked) {
  ScriptedClient client({});
  LlmExpander llm(client, options());
  ReferenceStartExpander start({template_kernel()}, llm);
  EXPECT_EQ(start.expand(root_request(1, nullptr)).size(), 1u);
  EXPECT_TRUE(client.requests.empty());
}

TEST(ReferenceStartExpander, WithoutATemplateTheLlmAloneWritesAndNeverFallsBackToRules) {
  ScriptedClient client({kPlan, python_answer(kernel(32)), python_answer(kernel(16))});
  LlmExpander llm(client, options());
  ReferenceStartExpander start({}, llm);
  llm::Usage unattributed;
  const std::vector<Proposal> out = start.expand(root_request(3, &unattributed));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].strategy, "llm:row_tiles");
  EXPECT_EQ(out[1].strategy, "llm:column_tiles");
  EXPECT_NE(sent(client.requests[0]).find("none: no template covers this reference"),
            std::string::npos);

  // A planner that answers nonsense twice: nothing, no rule variants of the reference, and the
  // usage of both calls is reported apart from any child.
  ScriptedClient bad({"no json here", "still none"});
  LlmExpander bad_llm(bad, options());
  ReferenceStartExpander bad_start({}, bad_llm);
  llm::Usage spent;
  EXPECT_TRUE(bad_start.expand(root_request(3, &spent)).empty());
  EXPECT_EQ(bad.requests.size(), 2u);
  EXPECT_GT(spent.input_tokens, 0);
}

TEST(ReferenceStartExpander, AnLlmFailureKeepsTheTemplatesKernelsUnlessCancelled) {
  ScriptedClient empty({});  // every call fails (the script has no answers)
  LlmExpander llm(empty, options());
  ReferenceStartExpander with_template({template_kernel()}, llm);
  const std::vector<Proposal> out = with_template.expand(root_request(3, nullptr));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].strategy, "generated:rowwise");
  ReferenceStartExpander alone({}, llm);
  EXPECT_THROW(alone.expand(root_request(3, nullptr)), llm::LlmError);

  class CancelledClient : public llm::Client {
   public:
    llm::ChatResponse complete(const llm::ChatRequest&, const llm::StreamSink&,
                               const llm::CancelFlag&) override {
      throw llm::LlmError(llm::ErrorKind::Cancelled, "cancelled");
    }
    std::string describe() const override { return "cancelled"; }
  } cancelled;
  LlmExpander cancelled_llm(cancelled, options());
  ReferenceStartExpander cancelled_start({template_kernel()}, cancelled_llm);
  EXPECT_THROW(cancelled_start.expand(root_request(3, nullptr)), llm::LlmError);
}

}  // namespace
}  // namespace mk::agents
