// Which nodes a search expands next, as pure functions of the recorded graph: a resumed run
// recomputes the same choice from the database, so strategies need no state of their own.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "agents/orchestration/run_store.h"
#include "agents/orchestration/search_params.h"

namespace mk::agents {

// A node may be best or expanded only when it compiled, is correct and has a speedup.
bool rankable(const NodeRecord& node);

// The best rankable node (highest speedup; the earlier node on a tie), if any.
const NodeRecord* best_node(const std::vector<NodeRecord>& nodes);

// Parents to expand this round. `exhausted` holds nodes whose expansion produced nothing new.
std::vector<int64_t> select_parents(const std::vector<NodeRecord>& nodes,
                                    const SearchParams& params, const std::set<int64_t>& exhausted);

}  // namespace mk::agents
