// A kernel's class ("matmul", "reduction", "elementwise", "attention", ...) from plain facts the
// caller already has (names, operand ranks, grid semantics), so lessons and retrieval can be
// shared between kernels of the same kind. No Pallas types here: knowledge must not know them.
#pragma once

#include <string>
#include <vector>

namespace mk::knowledge {

struct KernelFacts {
  std::vector<std::string> names;  // kernel function, wrapper function, file stem, task name ...
  std::vector<int> input_ranks;    // rank of each array operand (not scalar-prefetch)
  std::vector<int> output_ranks;
  bool has_arbitrary_axis = false;  // a grid axis marked "arbitrary" (a carried reduction)
};

// Names win when they say what the kernel is; otherwise ranks decide. Returns one of:
// attention, matmul, convolution, normalization, softmax, reduction, scan, elementwise, other.
std::string kernel_class(const KernelFacts& facts);

}  // namespace mk::knowledge
