#include "agents/orchestration/search_params.h"

#include <sstream>
#include <stdexcept>

namespace mk::agents {

using nlohmann::json;

json SearchParams::to_json() const {
  json j = {{"strategy", strategy},       {"beam_size", beam_size},
            {"branches", branches},       {"max_depth", max_depth},
            {"keep_factor", keep_factor}, {"ucb_exploration", ucb_exploration},
            {"concurrency", concurrency}, {"roofline_stop", roofline_stop},
            {"diagnosis", diagnosis}};
  // Only when asked for (or still automatic), so a run stored before the phase existed keeps
  // its text.
  if (autotune_configs != 0) j["autotune_configs"] = autotune_configs;
  return j;
}

SearchParams SearchParams::from_json(const json& j) {
  SearchParams p;
  if (!j.is_object()) return p;
  p.strategy = j.value("strategy", p.strategy);
  p.beam_size = j.value("beam_size", p.beam_size);
  p.branches = j.value("branches", p.branches);
  p.max_depth = j.value("max_depth", p.max_depth);
  p.keep_factor = j.value("keep_factor", p.keep_factor);
  p.ucb_exploration = j.value("ucb_exploration", p.ucb_exploration);
  p.concurrency = j.value("concurrency", p.concurrency);
  p.roofline_stop = j.value("roofline_stop", p.roofline_stop);
  p.diagnosis = j.value("diagnosis", p.diagnosis);
  p.autotune_configs = j.value("autotune_configs", p.autotune_configs);
  return p;
}

json Budget::to_json() const {
  return {{"iterations", iterations},
          {"evaluations", evaluations},
          {"seconds", seconds},
          {"tokens", tokens},
          {"usd", usd},
          {"patience", patience},
          {"target_speedup", target_speedup}};
}

Budget Budget::from_json(const json& j) {
  Budget b;
  if (!j.is_object()) return b;
  b.iterations = j.value("iterations", 0);
  b.evaluations = j.value("evaluations", 0);
  b.seconds = j.value("seconds", 0.0);
  b.tokens = j.value("tokens", int64_t{0});
  b.usd = j.value("usd", 0.0);
  b.patience = j.value("patience", 0);
  b.target_speedup = j.value("target_speedup", 0.0);
  return b;
}

Budget Budget::parse(const std::string& spec, Budget b) {
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("budget item '" + item + "' is not KEY=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    double number = 0;
    try {
      size_t used = 0;
      number = std::stod(value, &used);
      if (used != value.size() || number < 0) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw std::invalid_argument("budget " + key + ": '" + value +
                                  "' is not a non-negative number");
    }
    if (key == "iterations")
      b.iterations = static_cast<int>(number);
    else if (key == "evaluations")
      b.evaluations = static_cast<int>(number);
    else if (key == "seconds")
      b.seconds = number;
    else if (key == "tokens")
      b.tokens = static_cast<int64_t>(number);
    else if (key == "usd")
      b.usd = number;
    else if (key == "patience")
      b.patience = static_cast<int>(number);
    else if (key == "target")
      b.target_speedup = number;
    else
      throw std::invalid_argument("unknown budget '" + key +
                                  "' (iterations, evaluations, seconds, tokens, usd, patience, "
                                  "target)");
  }
  return b;
}

}  // namespace mk::agents
