#include "source/analysis/describe.h"

#include "source/analysis/vmem.h"

namespace mk::analysis {

using pallas::Kernel;
using pallas::Operand;

namespace {

std::string dims_text(const std::optional<std::vector<std::optional<int64_t>>>& dims) {
  if (!dims) return "?";
  std::string out = "(";
  for (size_t i = 0; i < dims->size(); ++i) {
    if (i) out += ", ";
    out += (*dims)[i] ? std::to_string(*(*dims)[i]) : "?";
  }
  return out + (dims->size() == 1 ? ",)" : ")");
}

std::string block_text(const Operand& op) {
  if (op.block.whole_array) return "whole array";
  if (!op.block.shape) return op.block.memory_space == pallas::MemorySpace::Any ? "-" : "?";
  std::string out = "(";
  const auto& dims = *op.block.shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += dims[i].squeezed ? "None" : dims[i].size ? std::to_string(*dims[i].size) : dims[i].text;
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::string grid_text(const Kernel& k) {
  if (!k.grid.rank) return "?";
  std::string out = "(";
  for (size_t i = 0; i < k.grid.extents.size(); ++i) {
    if (i) out += ", ";
    out += k.grid.extents[i] ? std::to_string(*k.grid.extents[i]) : "?";
  }
  return out + (k.grid.extents.size() == 1 ? ",)" : ")");
}

std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string kernel_summary(const Kernel& k) {
  std::string out = "grid " + grid_text(k) + ", " + std::to_string(k.inputs.size()) +
                    (k.inputs_complete ? "" : "+") + " in, " + std::to_string(k.outputs.size()) +
                    " out, " + pallas::to_string(k.backend);
  return out;
}

std::string hover_markdown(const Kernel& k, const knowledge::TpuGeneration& target) {
  std::string md = "**Pallas kernel `" + k.name + "`** — " + pallas::to_string(k.backend);
  if (k.backend == pallas::Backend::Tpu) md += ", target " + target.name;
  md += "\n\n";
  md += "- grid: `" + grid_text(k) + "`";
  if (auto steps = total_grid_steps(k); steps && *steps > 1)
    md += " (" + std::to_string(*steps) + " steps)";
  md += "\n";
  if (k.num_scalar_prefetch > 0)
    md += "- scalar prefetch: " + std::to_string(k.num_scalar_prefetch) + "\n";
  if (k.dimension_semantics) {
    md += "- dimension_semantics: ";
    for (size_t i = 0; i < k.dimension_semantics->size(); ++i) {
      md += (i ? ", " : "") + (*k.dimension_semantics)[i];
    }
    md += "\n";
  }
  if (k.interpret && *k.interpret) md += "- interpret mode\n";
  if (k.has_input_output_aliases) md += "- input_output_aliases set\n";
  md += "\n| operand | block | array | dtype | bytes/block | memory |\n|---|---|---|---|---|---|\n";
  auto row = [&](const Operand& op) {
    auto bytes = block_bytes(op);
    md += "| `" + cell(op.label) + "` | " + cell(block_text(op)) + " | " +
          cell(dims_text(op.array_shape)) + " | " + (op.dtype ? op.dtype->name : "?") + " | " +
          (bytes ? format_bytes(*bytes) : "?") + " | " + pallas::to_string(op.block.memory_space) +
          (op.block.buffer_count != 2 ? " x" + std::to_string(op.block.buffer_count) : "") + " |\n";
  };
  for (const Operand& op : k.inputs) row(op);
  for (const Operand& op : k.outputs) row(op);
  for (const pallas::Scratch& s : k.scratch) {
    auto bytes = scratch_bytes(s);
    md += "| scratch | " + dims_text(s.shape) + " | | " + (s.dtype ? s.dtype->name : "") + " | " +
          (bytes ? format_bytes(*bytes) : "") + " | " + s.kind + " |\n";
  }
  if (k.backend == pallas::Backend::Tpu) {
    const VmemEstimate est = estimate_vmem(k);
    const auto limit = k.vmem_limit_bytes ? k.vmem_limit_bytes : target.scoped_vmem_limit();
    md += "\nVMEM per grid step (double-buffered blocks + scratch, tile-padded): ";
    md += (est.complete ? "" : "at least ") + format_bytes(est.known_bytes);
    if (limit) {
      md += " of " + format_bytes(*limit) +
            (k.vmem_limit_bytes ? " (vmem_limit_bytes)" : " scoped limit");
    }
    if (target.vmem_bytes)
      md += "; " + format_bytes(*target.vmem_bytes) + " physical on " + target.name;
    md += "\n";
  }
  std::vector<std::string> unknown = k.unknowns;
  for (const Operand& op : k.inputs) {
    if (!op.unknown_because.empty()) unknown.push_back(op.unknown_because);
  }
  for (const Operand& op : k.outputs) {
    if (!op.unknown_because.empty()) unknown.push_back(op.unknown_because);
  }
  if (!k.inputs_complete) unknown.push_back("the full list of inputs");
  if (!unknown.empty()) {
    md += "\n*Not known statically:*\n";
    for (const std::string& u : unknown) md += "- " + u + "\n";
  }
  return md;
}

std::vector<InlayLabel> inlay_labels(const Kernel& k, const knowledge::TpuGeneration& target) {
  std::vector<InlayLabel> out;
  auto block = [&](const Operand& op) {
    if (op.block.whole_array || op.block.shape_span.empty()) return;
    auto bytes = block_bytes(op);
    if (!bytes) return;
    out.push_back({op.block.shape_span.end, " " + format_bytes(*bytes) + " " + op.dtype->name,
                   "bytes per block of `" + op.label + "`"});
  };
  for (const Operand& op : k.inputs) block(op);
  for (const Operand& op : k.outputs) block(op);
  if (k.backend == pallas::Backend::Tpu) {
    const VmemEstimate est = estimate_vmem(k);
    if (est.known_bytes > 0) {
      const auto limit = k.vmem_limit_bytes ? k.vmem_limit_bytes : target.scoped_vmem_limit();
      std::string label =
          " VMEM " + std::string(est.complete ? "" : ">=") + format_bytes(est.known_bytes);
      if (limit) label += "/" + format_bytes(*limit);
      out.push_back({k.call_span.end, label, "estimated VMEM per grid step on " + target.name});
    }
  }
  return out;
}

}  // namespace mk::analysis
