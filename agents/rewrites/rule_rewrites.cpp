// The rewrite driver: picks the kernel, runs every rule, keeps the variants that parse cleanly,
// still contain a pallas_call, and differ from the input and from each other.
#include "agents/rewrites/rule_rewrites.h"

#include <set>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "agents/rewrites/rewrite_support.h"
#include "source/pallas/kernel_extractor.h"
#include "source/syntax/python_tree.h"

namespace mk::agents {

std::vector<Variant> rule_based_rewrites(const std::string& source,
                                         const std::string& kernel_name) {
  return rule_based_rewrites(source, kernel_name, RewriteOptions{});
}

std::vector<Variant> rule_based_rewrites(const std::string& source, const std::string& kernel_name,
                                         const RewriteOptions& options) {
  syntax::PythonTree tree;
  tree.parse(source);
  if (tree.has_error()) {
    throw std::invalid_argument("the source does not parse: " + check_python_syntax(source).error);
  }
  const pallas::PallasModel model = pallas::extract_pallas_model(tree.root(), source);
  const pallas::Kernel* kernel = nullptr;
  size_t kernel_index = 0;
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const pallas::Kernel& k = model.kernels[i];
    if (k.backend != pallas::Backend::Tpu) continue;
    if (kernel_name.empty() || k.name == kernel_name) {
      kernel = &k;
      kernel_index = i;
      break;
    }
  }
  if (!kernel) {
    throw std::invalid_argument(kernel_name.empty()
                                    ? "no TPU pallas_call found in the source"
                                    : "no TPU pallas_call with kernel `" + kernel_name + "`");
  }
  std::vector<Variant> candidates;
  rewrites::block_size_rewrites(source, model, kernel_index, candidates);
  rewrites::dimension_semantics_rewrite(source, tree.root(), *kernel, candidates);
  rewrites::buffering_rewrites(source, tree.root(), *kernel, options, candidates);
  rewrites::accumulator_rewrites(source, tree.root(), *kernel, candidates);

  std::vector<Variant> out;
  std::set<std::string> seen{source};
  for (Variant& v : candidates) {
    const ParseCheck parsed = check_python_syntax(v.source);
    if (!parsed.ok) {
      spdlog::warn("rewrite '{}' dropped: {}", v.description, parsed.error);
      continue;
    }
    if (!mentions_pallas_call(v.source) || !seen.insert(v.source).second) continue;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace mk::agents
