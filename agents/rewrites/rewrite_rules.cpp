// The individual rewrite rules. Each produces candidate sources; rule_rewrites.cpp validates them.
#include <algorithm>
#include <set>

#include "agents/rewrites/rewrite_support.h"
#include "agents/tuning/search_space.h"
#include "source/pallas/kernel_extractor.h"
#include "source/syntax/node_util.h"
#include "source/syntax/python_tree.h"

namespace mk::agents::rewrites {

using syntax::field;
using syntax::is;
using syntax::named_children;
using syntax::text_of;

namespace {

// The block and scratch shapes of one kernel, comparable across two versions of the file.
std::string block_signature(const pallas::Kernel& kernel) {
  std::string out;
  auto dims = [&](const std::vector<pallas::Dim>& shape) {
    for (const auto& d : shape) out += d.size ? std::to_string(*d.size) + "," : "?,";
    out += ";";
  };
  for (const auto* list : {&kernel.inputs, &kernel.outputs}) {
    for (const pallas::Operand& op : *list) {
      if (op.block.shape) dims(*op.block.shape);
    }
  }
  for (const pallas::Scratch& s : kernel.scratch) {
    if (s.shape) {
      for (const auto& d : *s.shape) out += d ? std::to_string(*d) + "," : "?,";
    }
    out += ";";
  }
  return out;
}

}  // namespace

void block_size_rewrites(const std::string& source, const pallas::PallasModel& model,
                         size_t kernel_index, std::vector<Variant>& out) {
  SearchSpaceOptions options;
  options.doublings = 1;  // x2 and /2 only
  options.max_configs = 1u << 20;
  const std::string before = block_signature(model.kernels[kernel_index]);
  for (const TunableParam& param : derive_search_space(source, options)) {
    for (size_t i = 1; i < param.values.size(); ++i) {
      std::string changed = apply_config(source, {{param.name, param.values[i]}});
      // Only parameters of this kernel: another kernel's block sizes are not its rewrites.
      syntax::PythonTree tree;
      tree.parse(changed);
      const pallas::PallasModel after = pallas::extract_pallas_model(tree.root(), changed);
      // (When this kernel's blocks are not fully known, e.g. sizes from a generator the model
      // cannot follow, the parameter is kept.)
      if (after.kernels.size() != model.kernels.size() ||
          (block_signature(after.kernels[kernel_index]) == before &&
           before.find('?') == std::string::npos)) {
        continue;
      }
      out.push_back({std::move(changed), "block_sizes",
                     param.name + " " + param.current.dump() + " -> " + param.values[i].dump()});
    }
  }
}

void dimension_semantics_rewrite(const std::string& source, TSNode root,
                                 const pallas::Kernel& kernel, std::vector<Variant>& out) {
  if (kernel.backend != pallas::Backend::Tpu || kernel.dimension_semantics) return;
  if (!kernel.grid.rank || *kernel.grid.rank == 0 || kernel.outputs.empty()) return;
  const size_t rank = *kernel.grid.rank;
  // An axis is parallel when some output's index map uses it: each of its values writes its own
  // output blocks. Otherwise the output block stays resident across it: a reduction (arbitrary).
  std::vector<bool> parallel(rank, false);
  for (const pallas::Operand& op : kernel.outputs) {
    if (op.block.whole_array) continue;  // one block for the whole grid: no axis is parallel
    if (!op.block.index_map) return;
    auto shape = lambda_shape(root, source, op.block.index_map->span);
    if (!shape || shape->params.size() < rank) return;  // cannot tell: no claim
    for (size_t axis = 0; axis < rank; ++axis) {
      const auto& names = shape->body_names;
      if (std::find(names.begin(), names.end(), shape->params[axis]) != names.end()) {
        parallel[axis] = true;
      }
    }
  }
  if (std::none_of(parallel.begin(), parallel.end(), [](bool p) { return p; })) return;
  std::string semantics = "(";
  for (size_t axis = 0; axis < rank; ++axis) {
    semantics +=
        std::string(axis ? ", " : "") + (parallel[axis] ? "\"parallel\"" : "\"arbitrary\"");
  }
  semantics += rank == 1 ? ",)" : ")";
  TSNode site = node_with_span(root, kernel.site_span, "call");
  if (ts_node_is_null(site)) return;
  std::vector<SourceEdit> edits;
  TSNode existing = keyword_argument(site, source, "compiler_params");
  if (!ts_node_is_null(existing)) {
    TSNode params_call = field(existing, "value");
    if (!is(params_call, "call")) return;  // a dict or a variable: leave it alone
    const std::string callee(text_of(field(params_call, "function"), source));
    if (callee.find("CompilerParams") == std::string::npos) return;
    TSNode args = field(params_call, "arguments");
    const uint32_t open = ts_node_start_byte(args) + 1;
    const bool has_args = !named_children(args).empty();
    edits.push_back({open, open, "dimension_semantics=" + semantics + (has_args ? ", " : "")});
  } else {
    auto alias = pallas_tpu_alias(root, source);
    if (!alias) edits.push_back(add_pallas_tpu_import(root, source));
    auto arg = append_argument(site, source,
                               "compiler_params=" + alias.value_or("pltpu") +
                                   ".CompilerParams(dimension_semantics=" + semantics + ")");
    if (!arg) return;
    edits.push_back(*arg);
  }
  std::string words;
  for (size_t axis = 0; axis < rank; ++axis) {
    words += std::string(axis ? ", " : "") + (parallel[axis] ? "parallel" : "arbitrary");
  }
  out.push_back({apply_edits(source, edits), "dimension_semantics",
                 "dimension_semantics (" + words + ") for the grid of `" + kernel.name + "`"});
}

namespace {

// The `pl` in `pl.BlockSpec(...)`; nullopt for a bare `BlockSpec(...)`.
std::optional<std::string> pallas_module_of(TSNode block_spec_call, std::string_view source) {
  TSNode callee = field(block_spec_call, "function");
  if (!is(callee, "attribute")) return std::nullopt;
  return std::string(text_of(field(callee, "object"), source));
}

bool block_spec_shared(const pallas::Kernel& kernel, const pallas::Operand& op) {
  int uses = 0;
  for (const auto* list : {&kernel.inputs, &kernel.outputs}) {
    for (const pallas::Operand& other : *list) {
      if (other.block.span.start == op.block.span.start &&
          other.block.span.end == op.block.span.end) {
        ++uses;
      }
    }
  }
  return uses > 1;
}

}  // namespace

void buffering_rewrites(const std::string& source, TSNode root, const pallas::Kernel& kernel,
                        const RewriteOptions& options, std::vector<Variant>& out) {
  if (kernel.backend != pallas::Backend::Tpu || !kernel.grid.rank || *kernel.grid.rank == 0) return;
  const size_t rank = *kernel.grid.rank;
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    const pallas::Operand& op = kernel.inputs[i];
    if (op.block.whole_array || !op.block.index_map || op.block.buffer_count != 2) continue;
    if (op.block.memory_space != pallas::MemorySpace::Default &&
        op.block.memory_space != pallas::MemorySpace::Vmem) {
      continue;
    }
    TSNode spec = node_with_span(root, op.block.span, "call");
    if (ts_node_is_null(spec) || block_spec_shared(kernel, op)) continue;
    if (!ts_node_is_null(keyword_argument(spec, source, "pipeline_mode"))) continue;
    auto module = pallas_module_of(spec, source);
    auto shape = lambda_shape(root, source, op.block.index_map->span);
    if (!module || !shape || shape->params.size() < rank) continue;
    bool uses_grid = false;
    for (size_t axis = 0; axis < rank; ++axis) {
      const auto& names = shape->body_names;
      uses_grid |= std::find(names.begin(), names.end(), shape->params[axis]) != names.end();
    }
    // A block that never changes is fetched once: its second buffer is wasted VMEM. A block that
    // changes every step may hide DMA latency behind a third buffer, where JAX lowers that.
    int buffers = 0;
    if (!uses_grid) {
      buffers = 1;
    } else if (options.max_buffer_count >= 3) {
      buffers = 3;
    }
    if (buffers == 0) continue;
    auto edit = append_argument(
        spec, source, "pipeline_mode=" + *module + ".Buffered(" + std::to_string(buffers) + ")");
    if (!edit) continue;
    out.push_back({apply_edits(source, {*edit}), "buffering",
                   "pl.Buffered(" + std::to_string(buffers) + ") on input `" + op.label + "` of `" +
                       kernel.name + "`" +
                       (buffers == 1 ? " (its block never changes)" : " (deeper prefetch)")});
  }
}

void accumulator_rewrites(const std::string& source, TSNode root, const pallas::Kernel& kernel,
                          std::vector<Variant>& out) {
  if (!kernel.kernel_def_span || !kernel.inputs_complete) return;
  TSNode def = node_with_span(root, *kernel.kernel_def_span, "function_definition");
  if (ts_node_is_null(def)) return;
  std::vector<std::string> params;
  for (TSNode p : named_children(field(def, "parameters"))) {
    params.emplace_back(is(p, "identifier") ? text_of(p, source) : "");
  }
  // Names the kernel accumulates into: `ref[...] += ...`.
  std::set<std::string> accumulated;
  syntax::for_each_descendant(field(def, "body"), [&](TSNode node, size_t) {
    if (!is(node, "augmented_assignment")) return;
    TSNode target = field(node, "left");
    if (is(target, "subscript")) target = field(target, "value");
    if (is(target, "identifier")) accumulated.emplace(text_of(target, source));
  });
  const size_t first_scratch = static_cast<size_t>(kernel.num_scalar_prefetch) +
                               kernel.inputs.size() + kernel.outputs.size();
  for (size_t s = 0; s < kernel.scratch.size(); ++s) {
    const pallas::Scratch& scratch = kernel.scratch[s];
    if (scratch.memory_space != pallas::MemorySpace::Vmem || !scratch.dtype) continue;
    if (scratch.dtype->name != "bfloat16" && scratch.dtype->name != "float16") continue;
    if (first_scratch + s >= params.size() || !accumulated.count(params[first_scratch + s])) {
      continue;
    }
    TSNode call = node_with_span(root, scratch.span, "call");
    if (ts_node_is_null(call)) continue;
    TSNode dtype = keyword_argument(call, source, "dtype");
    if (!ts_node_is_null(dtype)) {
      dtype = field(dtype, "value");
    } else {
      auto args = named_children(field(call, "arguments"));
      if (args.size() < 2) continue;
      dtype = args[1];
    }
    std::string text(text_of(dtype, source));
    const std::string old_name = scratch.dtype->name;
    const size_t at = text.rfind(old_name);
    if (at == std::string::npos) continue;
    text.replace(at, old_name.size(), "float32");
    out.push_back(
        {apply_edits(source, {{ts_node_start_byte(dtype), ts_node_end_byte(dtype), text}}),
         "accumulator_f32",
         "accumulator `" + params[first_scratch + s] + "` " + old_name + " -> float32"});
  }
}

}  // namespace mk::agents::rewrites
