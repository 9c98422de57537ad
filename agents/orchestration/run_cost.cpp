#include "agents/orchestration/run_cost.h"

#include <cmath>

namespace mk::agents {

using nlohmann::json;

namespace {

// The number at `key`, or 0 when it is missing, not a number or not finite.
double number_or_zero(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  const double value = it->get<double>();
  return std::isfinite(value) ? value : 0;
}

int64_t integer_or_zero(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  const double value = it->get<double>();
  return std::isfinite(value) ? static_cast<int64_t>(value) : 0;
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
  c.tokens_in = integer_or_zero(j, "tokens_in");
  c.tokens_out = integer_or_zero(j, "tokens_out");
  c.usd = number_or_zero(j, "usd");
  c.host_seconds = number_or_zero(j, "host_seconds");
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
  return j;
}

RunCost RunCost::from_json(const json& j) {
  RunCost c;
  if (!j.is_object()) return c;
  c.tokens_in = integer_or_zero(j, "tokens_in");
  c.tokens_out = integer_or_zero(j, "tokens_out");
  c.usd = number_or_zero(j, "usd");
  c.host_seconds = number_or_zero(j, "host_seconds");
  c.evaluations = static_cast<int>(integer_or_zero(j, "evaluations"));
  c.cache_hits = static_cast<int>(integer_or_zero(j, "cache_hits"));
  c.llm_calls = integer_or_zero(j, "llm_calls");
  return c;
}

}  // namespace mk::agents
