// The parts of a module its kernels' analysis reads, chosen before any parse: the top-level
// statements a pallas_call site reaches, leaving out the helpers between kernels. A large file's
// first parse covers only these (tree-sitter's included ranges) so its first diagnostics come
// sooner; the full parse follows off the editor's main loop.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "source/syntax/byte_span.h"
#include "source/syntax/name_filter.h"
#include "source/syntax/top_level_units.h"

namespace mk::pallas {

// A kept def that is named where a kernel goes (`pallas_call(name, ...)`, `partial(name, ...)`):
// the analysis reads its header and never its body, so a parse may read the body as blank.
struct SkippedBody {
  uint32_t def_start = 0;  // the unit's start (its first decorator, or `def`)
  syntax::ByteSpan body;   // TopLevelUnit::body
};

struct KernelRegions {
  std::vector<syntax::ByteSpan> spans;  // in order, disjoint, neighbouring statements merged
  size_t bytes = 0;                     // how much of the text they cover
  std::vector<SkippedBody> skipped;     // in order, inside `spans`
};

// What regions() keeps, and the same statements for two parses made side by side: the sites cut
// in two where half of their text lies on each side, each half with whatever its sites reach
// (imports, compound statements and task bindings in both). Analysed apart and merged
// (pallas::merge_half_models), the halves give the model of `all`.
struct SplitKernelRegions {
  KernelRegions all;
  std::array<KernelRegions, 2> halves;  // both empty when there are fewer than two sites
};

// Kept: every import and compound statement; every statement that mentions pallas_call, one of
// `callee_names` (wrappers imported from other files) or a module-level alias of them; every
// definition that calls a kept one of those (a wrapper's callers); whatever binds a name the task
// conventions read (reference, make_inputs, CONFIG, ...); and, transitively, every definition or
// assignment that may bind a name a kept statement mentions. Analysing only these gives the model
// a full parse gives (tests/unit/kernel_regions_test.cpp).
class KernelRegionFinder {
 public:
  // One lexical pass over `text`, which must outlive the finder.
  explicit KernelRegionFinder(std::string_view text);

  // The import statements: enough to find the wrappers other files define.
  std::vector<syntax::ByteSpan> imports() const;
  KernelRegions regions(const std::vector<std::string>& callee_names) const;
  // regions(), and the same statements for two parses made side by side.
  SplitKernelRegions split_regions(const std::vector<std::string>& callee_names) const;

 private:
  // The units kept whatever else is: those every half needs, and the pallas_call sites (with a
  // wrapper's callers), in order.
  struct Seeds {
    std::vector<size_t> common;
    std::vector<size_t> sites;
    std::unordered_set<std::string_view> wrappers;  // defs whose callers are sites too
  };
  Seeds seeds(const std::vector<std::string>& callee_names) const;
  // `seeds` and, transitively, every unit that may bind a name a kept one mentions.
  std::vector<bool> reach(const std::vector<size_t>& seeds) const;
  // What decides which kept defs have their bodies skipped: the seeds (read whole) and the
  // callees whose first argument is a kernel (pallas_call, partial, the seeds' wrappers).
  struct Skipping {
    std::vector<bool> seeded;
    std::unordered_set<std::string_view> callers;
  };
  Skipping skipping(const Seeds& seeds, const std::vector<std::string>& callee_names) const;
  KernelRegions spans_of(const std::vector<bool>& kept, const Skipping& skipping) const;
  std::string_view text_of(size_t unit) const;

  std::string_view text_;
  std::vector<syntax::TopLevelUnit> units_;
  // The units that may bind a name: a definition its own, a simple statement those before its
  // `=`. Words are read from a unit only when it matters (most of a large file does not).
  std::unordered_map<std::string_view, std::vector<size_t>> binders_;
  syntax::NameFilter binder_names_;  // the keys of binders_
};

}  // namespace mk::pallas
