#include "demo_run.h"

#include <chrono>
#include <nlohmann/json.hpp>

namespace mk::report::testing {

using nlohmann::json;

std::string baseline_code() {
  return "import jax\n"
         "import jax.numpy as jnp\n"
         "from jax.experimental import pallas as pl\n"
         "\n"
         "BLOCK_ROWS = 16\n"
         "\n"
         "def _kernel(x_ref, o_ref):\n"
         "    o_ref[...] = 2.0 * x_ref[...]\n"
         "\n"
         "def workload(x):\n"
         "    spec = pl.BlockSpec((BLOCK_ROWS, 128), lambda i: (i, 0))\n"
         "    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),\n"
         "                          grid=(x.shape[0] // BLOCK_ROWS,), in_specs=[spec],\n"
         "                          out_specs=spec)(x)\n";
}

namespace {

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

agents::NodeMetrics metrics(bool correct, double candidate_s, double reference_s) {
  agents::NodeMetrics m;
  m.correct = correct;
  // On a CPU host the worker times the candidate in Pallas interpret mode and XLA on the CPU
  // beside it; the search scores by the TPU model's prediction.
  m.time_kind = "interpret";
  m.host = "local";
  m.candidate_time = agents::TimedSide{candidate_s, candidate_s * 0.9, candidate_s * 1.1, 20, {}};
  m.reference_time = agents::TimedSide{reference_s, {}, {}, 20, {}};
  m.facts["pallas_calls"] = json::array({{{"kernel", "_kernel"}}});
  m.facts["run_mode"] = {{"mode", "interpret"}, {"interpret_kind", "hlo"}, {"platform", "cpu"}};
  agents::CallPrediction p;
  p.kernel = "_kernel";
  p.predicted_s = candidate_s;
  p.bound = "memory";
  p.label = "predicted (model, v5e)";
  m.predictions = {p};
  return m;
}

agents::NodeCost cost(int64_t tokens_in, int64_t tokens_out, double usd, double host_seconds,
                      bool cache_hit = false) {
  return {tokens_in, tokens_out, usd, host_seconds, cache_hit};
}

}  // namespace

agents::RunRecord demo_run_record() {
  agents::RunRecord run;
  run.mode = "graph";
  run.strategy = "beam";
  run.file = std::string("/tmp/kernels/") + kPlanted + "scale.py";
  run.kernel = "workload";
  run.target = "v5e";
  run.host = "local";
  run.llm = "replay:demo.jsonl";
  run.status = agents::RunStatus::done;
  run.stop_reason = "budget: 6 iterations";
  run.score_kind = "predicted (model, v5e)";
  run.best_node = 1;
  run.params.xla = agents::XlaBaseline{"predicted", 2.4e-5, {}, ""};
  run.cost = {.tokens_in = 1500,
              .tokens_out = 420,
              .usd = 0.0175,
              .host_seconds = 14.5,
              .evaluations = 5,
              .cache_hits = 1};
  return run;
}

std::vector<agents::NodeRecord> demo_nodes(int64_t start_time) {
  const std::string base = baseline_code();
  std::vector<agents::NodeRecord> nodes(6);
  auto& root = nodes[0];
  root.strategy = "baseline";
  root.description = "the kernel as written";
  root.code = base;
  root.status = agents::NodeStatus::correct;
  root.score_s = 2.0e-5;
  root.speedup = 1.0;
  root.metrics = metrics(true, 2.0e-5, 2.4e-5);
  root.cost = cost(0, 0, 0, 2.5);

  auto& bigger = nodes[1];
  bigger.parent = 0;
  bigger.depth = 1;
  bigger.strategy = "block_sizes";
  bigger.description = "double the row block";
  bigger.plan = std::string("Use 32-row blocks. ") + kPlanted;
  bigger.code = replace_once(base, "BLOCK_ROWS = 16", "BLOCK_ROWS = 32");
  bigger.status = agents::NodeStatus::correct;
  bigger.score_s = 2.0e-5 / 1.42;
  bigger.speedup = 1.42;
  bigger.metrics = metrics(true, 2.0e-5 / 1.42, 2.4e-5);
  bigger.cost = cost(0, 0, 0, 3.0);

  auto& llm = nodes[2];
  llm.parent = 0;
  llm.depth = 1;
  llm.strategy = "llm:plan";
  llm.description = "fuse the scale into the store";
  llm.plan = "Write 3x instead of 2x.";
  llm.code = replace_once(base, "2.0 * x_ref", "3.0 * x_ref");
  llm.status = agents::NodeStatus::incorrect;
  llm.error = "mismatch: seed 7: output 0: 8192 of 8192 elements outside rtol";
  llm.metrics = metrics(false, 2.0e-5, 2.4e-5);
  llm.cost = cost(1200, 300, 0.0123, 2.0);

  auto& failed = nodes[3];
  failed.parent = 1;
  failed.depth = 2;
  failed.strategy = "autotune";
  failed.description = "12-row blocks";
  failed.code = replace_once(bigger.code, "BLOCK_ROWS = 32", "BLOCK_ROWS = 12");
  failed.status = agents::NodeStatus::failed;
  failed.error = std::string("lowering: block shape (12, 128) is not a multiple of 8 ") + kPlanted;
  failed.cost = cost(0, 0, 0, 1.5);

  auto& unrolled = nodes[4];
  unrolled.parent = 1;
  unrolled.depth = 2;
  unrolled.strategy = "rule:unroll";
  unrolled.description = "same kernel, a comment added";
  unrolled.code = replace_once(bigger.code, "def workload(x):\n",
                               std::string("def workload(x):\n    # ") + kPlanted + "\n");
  unrolled.status = agents::NodeStatus::correct;
  unrolled.score_s = 2.0e-5 / 1.30;
  unrolled.speedup = 1.30;
  unrolled.metrics = metrics(true, 2.0e-5 / 1.30, 2.4e-5);
  unrolled.cost = cost(300, 120, 0.0052, 0.0, /*cache_hit=*/true);

  auto& pending = nodes[5];
  pending.parent = 2;
  pending.depth = 2;
  pending.strategy = "llm:debug";
  pending.description = "waiting for the host";
  pending.code = llm.code;
  pending.status = agents::NodeStatus::pending;

  for (size_t k = 0; k < nodes.size(); ++k) {
    nodes[k].id = static_cast<int64_t>(k);
    nodes[k].time_kind = nodes[k].speedup ? "predicted" : "";
    nodes[k].created_at = start_time + static_cast<int64_t>(k);
    if (nodes[k].status != agents::NodeStatus::pending)
      nodes[k].finished_at = start_time + 10 * (static_cast<int64_t>(k) + 1);
  }
  return nodes;
}

std::string write_demo_run(agents::RunStore& store) {
  const std::string id = store.create_run(demo_run_record());
  const auto run = store.run(id);
  for (auto node : demo_nodes(run->created_at)) {
    node.run_id = id;
    store.add_node(node);
  }
  return id;
}

}  // namespace mk::report::testing
