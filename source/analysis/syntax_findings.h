// Python syntax errors as findings (MK000), so `maxkernel check` fails a file it cannot read
// instead of passing it with no kernels. The editor leaves syntax errors to its Python support.
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <limits>
#include <string_view>
#include <vector>

#include "source/analysis/findings.h"

namespace mk::analysis {

// Findings have a kernel index; a syntax error belongs to none.
inline constexpr size_t kNoKernel = std::numeric_limits<size_t>::max();

// One MK000 error per outermost ERROR or MISSING node, in source order, at most `limit`.
std::vector<Finding> syntax_findings(TSNode root, std::string_view source, size_t limit = 10);

}  // namespace mk::analysis
