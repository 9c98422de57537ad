// Internal to agents/rewrites: tree lookups shared by the rules.
#pragma once

#include <tree_sitter/api.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/rewrites/rule_rewrites.h"
#include "agents/tuning/python_source.h"
#include "source/pallas/kernel_model.h"

namespace mk::agents::rewrites {

// The smallest node of `type` covering exactly `span` (null node when there is none).
TSNode node_with_span(TSNode root, pallas::Span span, const char* type);
// The keyword argument `name=` in a call's argument_list (null node when absent).
TSNode keyword_argument(TSNode call, std::string_view source, std::string_view name);
// An edit that appends `text` (e.g. `compiler_params=...`) as the call's last argument, keeping
// the call's layout: on its own line when the arguments are one per line.
std::optional<SourceEdit> append_argument(TSNode call, std::string_view source,
                                          const std::string& text);
// The alias a module import gives `jax.experimental.pallas.tpu` ("pltpu"), if any.
std::optional<std::string> pallas_tpu_alias(TSNode root, std::string_view source);
// An edit adding `from jax.experimental.pallas import tpu as pltpu` after the last top-level
// import.
SourceEdit add_pallas_tpu_import(TSNode root, std::string_view source);
// Identifiers used in a lambda's body, and its parameter names in order.
struct LambdaShape {
  std::vector<std::string> params;
  std::vector<std::string> body_names;
};
std::optional<LambdaShape> lambda_shape(TSNode root, std::string_view source, pallas::Span span);

// The rules. Each appends candidate variants (validated later by the driver).
void block_size_rewrites(const std::string& source, const pallas::PallasModel& model,
                         size_t kernel_index, std::vector<Variant>& out);
void dimension_semantics_rewrite(const std::string& source, TSNode root,
                                 const pallas::Kernel& kernel, std::vector<Variant>& out);
void buffering_rewrites(const std::string& source, TSNode root, const pallas::Kernel& kernel,
                        const RewriteOptions& options, std::vector<Variant>& out);
void accumulator_rewrites(const std::string& source, TSNode root, const pallas::Kernel& kernel,
                          std::vector<Variant>& out);

}  // namespace mk::agents::rewrites
