#include "agents/orchestration/selection.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace mk::agents {

bool rankable(const NodeRecord& node) {
  return node.status == NodeStatus::correct && node.speedup.has_value();
}

namespace {

bool better(const NodeRecord& a, const NodeRecord& b) {
  if (*a.speedup != *b.speedup) return *a.speedup > *b.speedup;
  return a.id < b.id;
}

bool expandable(const NodeRecord& n, const SearchParams& params,
                const std::set<int64_t>& exhausted) {
  return rankable(n) && n.depth < params.max_depth && !exhausted.count(n.id);
}

std::vector<const NodeRecord*> ranked(const std::vector<NodeRecord>& nodes,
                                      const std::function<bool(const NodeRecord&)>& keep) {
  std::vector<const NodeRecord*> out;
  for (const NodeRecord& n : nodes)
    if (rankable(n) && keep(n)) out.push_back(&n);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return better(*a, *b); });
  return out;
}

std::map<int64_t, const NodeRecord*> by_id(const std::vector<NodeRecord>& nodes) {
  std::map<int64_t, const NodeRecord*> m;
  for (const NodeRecord& n : nodes) m[n.id] = &n;
  return m;
}

// The root's child a node descends from (its lineage in a parallel search); -1 for the root.
int64_t lineage_of(const NodeRecord& n, const std::map<int64_t, const NodeRecord*>& ids) {
  const NodeRecord* cur = &n;
  while (cur->parent && *cur->parent != 0) {
    auto it = ids.find(*cur->parent);
    if (it == ids.end()) break;
    cur = it->second;
  }
  return cur->parent ? cur->id : -1;
}

std::vector<int64_t> select_greedy(const std::vector<NodeRecord>& nodes, const SearchParams& params,
                                   const std::set<int64_t>& exhausted) {
  // The best node; if it is exhausted or too deep, the next best that is not.
  auto order = ranked(nodes, [&](const NodeRecord& n) { return expandable(n, params, exhausted); });
  if (order.empty()) return {};
  return {order.front()->id};
}

std::vector<int64_t> select_beam(const std::vector<NodeRecord>& nodes, const SearchParams& params,
                                 const std::set<int64_t>& exhausted) {
  // Level-synchronous: the deepest level that has rankable nodes forms the candidates, joined by
  // the best `keep_factor` share of the level above (so one bad level does not lose good parents).
  int deepest = -1;
  for (const NodeRecord& n : nodes)
    if (rankable(n)) deepest = std::max(deepest, n.depth);
  if (deepest < 0) return {};
  const size_t carried =
      static_cast<size_t>(std::ceil(params.keep_factor * static_cast<double>(params.beam_size)));
  std::vector<const NodeRecord*> pool;
  for (auto* n : ranked(nodes, [&](const NodeRecord& n) { return n.depth == deepest; }))
    pool.push_back(n);
  if (deepest > 0) {
    size_t taken = 0;
    for (auto* n : ranked(nodes, [&](const NodeRecord& n) { return n.depth == deepest - 1; })) {
      if (taken++ >= carried) break;
      pool.push_back(n);
    }
  }
  std::sort(pool.begin(), pool.end(), [](auto* a, auto* b) { return better(*a, *b); });
  std::vector<int64_t> out;
  for (auto* n : pool) {
    if (out.size() >= params.beam_size) break;
    if (expandable(*n, params, exhausted)) out.push_back(n->id);
  }
  return out;
}

std::vector<int64_t> select_parallel(const std::vector<NodeRecord>& nodes,
                                     const SearchParams& params,
                                     const std::set<int64_t>& exhausted) {
  // Independent lineages: until the root has beam_size children the root is expanded; then each
  // lineage (subtree of one root child) expands its own best node, never another lineage's.
  size_t root_children = 0;
  for (const NodeRecord& n : nodes)
    if (n.parent && *n.parent == 0) ++root_children;
  const auto ids = by_id(nodes);
  if (root_children < params.beam_size) {
    auto it = ids.find(0);
    if (it != ids.end() && expandable(*it->second, params, exhausted)) return {0};
  }
  std::map<int64_t, const NodeRecord*> best_in_lineage;
  for (const NodeRecord& n : nodes) {
    if (!expandable(n, params, exhausted)) continue;
    const int64_t lineage = lineage_of(n, ids);
    if (lineage < 0) continue;
    auto& slot = best_in_lineage[lineage];
    if (!slot || better(n, *slot)) slot = &n;
  }
  std::vector<int64_t> out;
  for (auto& [lineage, n] : best_in_lineage) out.push_back(n->id);
  return out;
}

std::vector<int64_t> select_ucb(const std::vector<NodeRecord>& nodes, const SearchParams& params,
                                const std::set<int64_t>& exhausted) {
  // UCB1 over the tree: a node's value is the mean speedup of its evaluated subtree (normalised
  // by the best so far), its visits the number of evaluated nodes in that subtree.
  const NodeRecord* best = best_node(nodes);
  if (!best) return {};
  const double scale = *best->speedup > 0 ? *best->speedup : 1.0;
  const auto ids = by_id(nodes);
  std::map<int64_t, double> reward_sum;
  std::map<int64_t, int> visits;
  for (const NodeRecord& n : nodes) {
    if (n.finished_at == 0) continue;
    const double reward = rankable(n) ? *n.speedup / scale : 0.0;
    const NodeRecord* cur = &n;
    while (true) {
      reward_sum[cur->id] += reward;
      visits[cur->id] += 1;
      if (!cur->parent) break;
      auto it = ids.find(*cur->parent);
      if (it == ids.end()) break;
      cur = it->second;
    }
  }
  const double total = std::max(1, visits[0]);
  const NodeRecord* choice = nullptr;
  double choice_score = -1;
  for (const NodeRecord& n : nodes) {
    if (!expandable(n, params, exhausted)) continue;
    const double v = std::max(1, visits[n.id]);
    const double score =
        reward_sum[n.id] / v + params.ucb_exploration * std::sqrt(std::log(total + 1) / v);
    if (score > choice_score) {
      choice = &n;
      choice_score = score;
    }
  }
  if (!choice) return {};
  return {choice->id};
}

}  // namespace

const NodeRecord* best_node(const std::vector<NodeRecord>& nodes) {
  const NodeRecord* best = nullptr;
  for (const NodeRecord& n : nodes)
    if (rankable(n) && (!best || better(n, *best))) best = &n;
  return best;
}

std::vector<int64_t> select_parents(const std::vector<NodeRecord>& nodes,
                                    const SearchParams& params,
                                    const std::set<int64_t>& exhausted) {
  if (params.strategy == "greedy") return select_greedy(nodes, params, exhausted);
  if (params.strategy == "parallel") return select_parallel(nodes, params, exhausted);
  if (params.strategy == "ucb") return select_ucb(nodes, params, exhausted);
  return select_beam(nodes, params, exhausted);
}

}  // namespace mk::agents
