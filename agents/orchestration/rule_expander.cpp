#include "agents/orchestration/rule_expander.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <map>

#include "agents/rewrites/rule_rewrites.h"
#include "agents/tuning/search_space.h"
#include "source/syntax/normalize.h"
#include "tpu/host/content_hash.h"

namespace mk::agents {

using nlohmann::json;

std::string candidate_hash(const std::string& source) {
  return tpu::sha256_hex(syntax::normalized_python_source(source));
}

namespace {

std::string value_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Single-parameter moves to the neighbours of the current value in the derived space.
std::vector<Proposal> autotune_moves(const std::string& source) {
  std::vector<Proposal> out;
  for (const TunableParam& p : derive_search_space(source)) {
    // Neighbours of the current value first (one step each way, then two, ...).
    const auto here = std::find(p.values.begin(), p.values.end(), p.current);
    const auto centre = static_cast<long>(here - p.values.begin());
    std::vector<json> ordered;
    for (long step = 1; step < static_cast<long>(p.values.size()) + 1; ++step)
      for (long i : {centre - step, centre + step})
        if (i >= 0 && i < static_cast<long>(p.values.size()) &&
            p.values[static_cast<size_t>(i)] != p.current)
          ordered.push_back(p.values[static_cast<size_t>(i)]);
    for (const json& v : ordered) {
      try {
        Proposal prop;
        prop.code = apply_config(source, json{{p.name, v}});
        prop.strategy = "autotune";
        prop.description = p.name + " " + value_text(p.current) + " -> " + value_text(v);
        prop.plan = "Autotuner move on " + p.origin + " " + p.name + ".";
        out.push_back(std::move(prop));
      } catch (const std::exception& e) {
        spdlog::debug("autotune move {}={} skipped: {}", p.name, value_text(v), e.what());
      }
    }
  }
  return out;
}

// The diagnosis picks the order: its families first (in its order), the rest after in the order
// they were found; within a family, moves in the direction it asks for first (stable).
void order_by_diagnosis(const Diagnosis& d, std::vector<std::string>& order,
                        std::map<std::string, std::vector<Proposal>>& buckets) {
  const std::vector<std::string> wanted = answering_strategies(d);
  if (wanted.empty()) return;
  auto rank = [&](const std::string& s) {
    const auto it = std::find(wanted.begin(), wanted.end(), s);
    return it == wanted.end() ? wanted.size() : static_cast<size_t>(it - wanted.begin());
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  const int direction = preferred_block_direction(d);
  for (auto& [strategy, bucket] : buckets) {
    if (direction != 0)
      std::stable_sort(bucket.begin(), bucket.end(), [&](const Proposal& a, const Proposal& b) {
        return block_move_direction(a.description) * direction >
               block_move_direction(b.description) * direction;
      });
    if (rank(strategy) < wanted.size())
      for (Proposal& p : bucket) p.answers = answer_text(d, p.description);
  }
}

}  // namespace

int block_move_direction(const std::string& description) {
  const auto arrow = description.find(" -> ");
  const auto space = description.rfind(' ', arrow == std::string::npos ? 0 : arrow - 1);
  if (arrow == std::string::npos || space == std::string::npos) return 0;
  try {
    const double from = std::stod(description.substr(space + 1, arrow - space - 1));
    const double to = std::stod(description.substr(arrow + 4));
    return to > from ? 1 : to < from ? -1 : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

std::vector<Proposal> RuleExpander::expand(const ExpansionRequest& request) {
  // Buckets by strategy, then round-robin so the children of a node try different ideas.
  std::map<std::string, std::vector<Proposal>> buckets;
  std::vector<std::string> order;
  auto add = [&](Proposal p) {
    if (!buckets.count(p.strategy)) order.push_back(p.strategy);
    buckets[p.strategy].push_back(std::move(p));
  };
  for (Variant& v : rule_based_rewrites(request.parent_code, request.kernel_name)) {
    Proposal p;
    p.code = std::move(v.source);
    p.strategy = v.strategy;
    p.description = v.description;
    p.plan = "Rule-based rewrite (" + v.strategy + "): " + v.description + ".";
    add(std::move(p));
  }
  for (Proposal& p : autotune_moves(request.parent_code)) add(std::move(p));
  if (request.diagnosis) order_by_diagnosis(*request.diagnosis, order, buckets);

  std::vector<Proposal> chosen;
  std::set<std::string> seen = request.known_hashes;
  std::map<std::string, size_t> next;
  bool progressed = true;
  while (chosen.size() < request.max_children && progressed) {
    progressed = false;
    for (const std::string& strategy : order) {
      if (chosen.size() >= request.max_children) break;
      auto& bucket = buckets[strategy];
      size_t& i = next[strategy];
      while (i < bucket.size()) {
        Proposal& p = bucket[i++];
        if (seen.insert(candidate_hash(p.code)).second) {
          chosen.push_back(std::move(p));
          progressed = true;
          break;
        }
      }
    }
  }
  return chosen;
}

}  // namespace mk::agents
