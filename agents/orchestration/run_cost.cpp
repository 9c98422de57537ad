#include "agents/orchestration/run_cost.h"

#include "tpu/host/json_fields.h"

namespace mk::agents {

using nlohmann::json;
using tpu::integer_or;
using tpu::number_or;

namespace {

// What a node and a run both spend: LLM tokens, their price and host time.
template <typename Cost>
void read_spend(const json& j, Cost& c) {
  c.tokens_in = integer_or(j, "tokens_in");
  c.tokens_out = integer_or(j, "tokens_out");
  c.usd = number_or(j, "usd");
  c.host_seconds = number_or(j, "host_seconds");
}

}  // namespace

json NodeCost::to_json() const {
  return {{"tokens_in", tokens_in},
          {"tokens_out", tokens_out},
          {"usd", usd},
          {"host_seconds", host_seconds},
          {"cache_hit", cache_hit}};
}

NodeCost NodeCost::from_json(const json& j) {
  NodeCost c;
  if (!j.is_object()) return c;
  read_spend(j, c);
  const auto hit = j.find("cache_hit");
  c.cache_hit = hit != j.end() && hit->is_boolean() && hit->get<bool>();
  return c;
}

void RunCost::add_evaluation(const NodeCost& node) {
  tokens_in += node.tokens_in;
  tokens_out += node.tokens_out;
  usd += node.usd;
  host_seconds += node.host_seconds;
  ++evaluations;
  if (node.cache_hit) ++cache_hits;
}

json RunCost::to_json() const {
  json j = {
      {"tokens_in", tokens_in},       {"tokens_out", tokens_out},   {"usd", usd},
      {"host_seconds", host_seconds}, {"evaluations", evaluations}, {"cache_hits", cache_hits}};
  if (llm_calls > 0) j["llm_calls"] = llm_calls;
  if (tuning_evaluations > 0 || tuning_cache_hits > 0) {
    j["tuning_evaluations"] = tuning_evaluations;
    j["tuning_cache_hits"] = tuning_cache_hits;
  }
  return j;
}

RunCost RunCost::from_json(const json& j) {
  RunCost c;
  if (!j.is_object()) return c;
  read_spend(j, c);
  c.evaluations = static_cast<int>(integer_or(j, "evaluations"));
  c.cache_hits = static_cast<int>(integer_or(j, "cache_hits"));
  c.llm_calls = integer_or(j, "llm_calls");
  c.tuning_evaluations = static_cast<int>(integer_or(j, "tuning_evaluations"));
  c.tuning_cache_hits = static_cast<int>(integer_or(j, "tuning_cache_hits"));
  return c;
}

}  // namespace mk::agents
