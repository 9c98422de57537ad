#include "source/pallas/half_models.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace mk::pallas {

namespace {

// Where the top-level statement a kernel's site lies in starts: the same in both trees, since
// their positions are those of the whole text.
uint32_t statement_start(TSNode root, const Kernel& k) {
  TSNode statement = ts_node_first_child_for_byte(root, k.site_span.start);
  return ts_node_is_null(statement) ? k.site_span.start : ts_node_start_byte(statement);
}

// The kernels as runs that share a statement, in order.
struct Group {
  uint32_t start = 0;
  size_t begin = 0, end = 0;
};
std::vector<Group> groups(TSNode root, const std::vector<Kernel>& kernels) {
  std::vector<Group> out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const uint32_t start = statement_start(root, kernels[i]);
    if (out.empty() || out.back().start != start) out.push_back({start, i, i});
    out.back().end = i + 1;
  }
  return out;
}

}  // namespace

PallasModel merge_half_models(PallasModel first, TSNode first_root, PallasModel second,
                              TSNode second_root) {
  const std::vector<Group> a = groups(first_root, first.kernels);
  const std::vector<Group> b = groups(second_root, second.kernels);
  PallasModel out;
  out.task = first.task;  // both halves hold every statement the conventions read
  out.syntax_errors = first.syntax_errors || second.syntax_errors;
  out.kernels.reserve(first.kernels.size() + second.kernels.size());
  auto take = [&](std::vector<Kernel>& from, const Group& g) {
    for (size_t i = g.begin; i < g.end; ++i) out.kernels.push_back(std::move(from[i]));
  };
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].start < b[j].start)) {
      take(first.kernels, a[i++]);
    } else if (i == a.size() || b[j].start < a[i].start) {
      take(second.kernels, b[j++]);
    } else {  // a statement both halves hold: read alike in each
      take(first.kernels, a[i++]);
      ++j;
    }
  }
  return out;
}

}  // namespace mk::pallas
