// Rule-based rewrites of one Pallas kernel, for a search that runs without an LLM. Each variant
// is ONE change, parses cleanly, and differs from the input and from every other variant.
#pragma once

#include <string>
#include <vector>

namespace mk::agents {

struct Variant {
  std::string source;       // the whole rewritten file
  std::string strategy;     // "block_sizes", "dimension_semantics", "accumulator_f32", "buffering"
  std::string description;  // one line for the user: "BLOCK_M 128 -> 256"
};

struct RewriteOptions {
  // The deepest pipeline buffering the installed JAX lowers for TPU. JAX 0.10.2's pallas_call
  // TPU lowering accepts only pl.Buffered(1) and pl.Buffered(2) ("Only single (1) and double (2)
  // buffering are supported"), so pl.Buffered(3) is offered only when this is raised.
  int max_buffer_count = 2;
};

// kernel_name: the kernel function's name; "" = the first TPU kernel in the file. Grid order is
// never swapped (not provably safe from the source alone).
std::vector<Variant> rule_based_rewrites(const std::string& source, const std::string& kernel_name);
std::vector<Variant> rule_based_rewrites(const std::string& source, const std::string& kernel_name,
                                         const RewriteOptions& options);

}  // namespace mk::agents
