#include "agents/orchestration/autotune_phase.h"

#include <spdlog/spdlog.h>

#include "agents/tuning/search_space.h"
#include "tpu/jobs/kernel_jobs.h"  // space_configs

namespace mk::agents {

using nlohmann::json;

std::string config_text(const json& config) {
  std::string out;
  for (const auto& [name, value] : config.items())
    out += (out.empty() ? "" : ", ") + name + "=" + value.dump();
  return out;
}

bool was_tuned(const json& facts) {
  return facts.is_object() && facts.contains("tuning");
}

AutotunePhase autotune_phase(Evaluator& evaluator, const std::string& code, int max_configs,
                             const std::function<bool()>& cancelled,
                             const std::optional<TuningSpace>& widened, int block_direction) {
  AutotunePhase phase;
  if (max_configs < 2) return phase;
  SearchSpaceOptions options;
  options.max_configs = static_cast<size_t>(max_configs);
  options.block_direction = block_direction;
  const bool llm = widened && !widened->params.empty();
  const std::vector<TunableParam> params =
      llm ? widened->params : derive_search_space(code, options);
  if (params.empty()) return phase;
  const json space = to_worker_space(params, options.max_configs);
  // Only the kernel's own configuration: nothing to choose.
  if (tpu::space_configs(space).size() < 2) return phase;
  phase.own_config = json::object();
  for (const TunableParam& p : params) phase.own_config[p.name] = p.current;
  const json& current = phase.own_config;

  phase.ran = true;
  phase.outcome = evaluator.autotune(code, space, cancelled);
  const TuningOutcome& t = phase.outcome;
  for (const ConfigScore& s : t.scores)
    if (s.config == current) phase.own = s;
  phase.record = {{"configs", t.configs},     {"correct", t.correct},
                  {"evaluated", t.evaluated}, {"cache_hits", t.cache_hits},
                  {"space", space},           {"best_config", t.best_config}};
  if (llm) phase.record["llm_values_added"] = widened->llm_values_added;
  if (t.unchecked > 0) phase.record["unchecked"] = t.unchecked;
  if (!t.ranking.is_null()) phase.record["ranking"] = t.ranking;
  if (t.best_s) phase.record["best_s"] = *t.best_s;
  if (!t.time_kind.empty()) phase.record["time_kind"] = t.time_kind;
  if (!t.error.empty()) phase.record["error"] = t.error;
  if (!t.error.empty() || !t.best_config.is_object() || t.best_config.empty()) return phase;

  bool own = true;
  for (const auto& [name, value] : t.best_config.items())
    if (!current.contains(name) || current[name] != value) own = false;
  if (own) return phase;
  try {
    TunedChild child;
    child.code = apply_config(code, t.best_config);
    child.description = "autotune phase: " + config_text(t.best_config) + " (best of " +
                        std::to_string(t.configs) + " configurations, " +
                        std::to_string(t.cache_hits) + " from the tuning cache)";
    phase.child = std::move(child);
  } catch (const std::exception& e) {
    spdlog::warn("autotune phase: the best configuration cannot be written in: {}", e.what());
    phase.record["error"] = e.what();
  }
  return phase;
}

}  // namespace mk::agents
