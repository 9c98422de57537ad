// Autotuner: the derived search space, optionally widened by the LLM.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "agents/subagents/subagents.h"

namespace mk::agents {

namespace {

constexpr size_t kMaxExtraValues = 4;

std::string describe_space(const std::vector<TunableParam>& params) {
  if (params.empty()) return "(no tunable parameters found)";
  std::string out;
  for (const TunableParam& p : params) {
    nlohmann::json values = p.values;
    out += "- " + p.name + " (" + p.origin + ", now " + p.current.dump() + "): " + values.dump() +
           "\n";
  }
  return out;
}

}  // namespace

TuningSpace tuning_space(llm::Client* client, const AgentContext& context,
                         const std::string& metrics, size_t max_configs,
                         const llm::CancelFlag& cancelled) {
  TuningSpace result;
  SearchSpaceOptions options;
  options.max_configs = max_configs;
  result.params = derive_search_space(context.kernel_source, options);
  if (client && !result.params.empty()) {
    std::vector<std::string> names;
    for (const TunableParam& p : result.params) names.push_back(p.name);
    std::map<std::string, std::vector<int64_t>> extra;
    AgentPrompt prompt{"autotuner",
                       {{"search_space", describe_space(result.params)},
                        {"metrics", metrics.empty() ? "(none)" : metrics},
                        {"max_values", std::to_string(kMaxExtraValues)}},
                       1024};
    ask_agent(
        *client, context, prompt,
        [&](const std::string& answer) {
          extra = parse_extra_values_answer(answer, names, kMaxExtraValues);
        },
        result, cancelled);
    for (TunableParam& p : result.params) {
      for (int64_t value : extra[p.name]) {
        const nlohmann::json v(value);
        if (std::find(p.values.begin(), p.values.end(), v) != p.values.end()) continue;
        if (!config_keeps_blocks_legal(context.kernel_source, {{p.name, v}})) {
          spdlog::info("autotuner: {}={} breaks the block rules; not added", p.name, value);
          ++result.llm_values_rejected;
          continue;
        }
        // LLM values go right after the current one, so capping keeps them.
        p.values.insert(p.values.begin() + 1, v);
        ++result.llm_values_added;
      }
    }
  }
  result.worker_space = to_worker_space(result.params, max_configs);
  return result;
}

}  // namespace mk::agents
