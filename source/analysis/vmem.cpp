#include "source/analysis/vmem.h"

#include <cstdio>

namespace mk::analysis {

using pallas::MemorySpace;
using pallas::Operand;

namespace {

bool lives_in_vmem(MemorySpace space) {
  return space == MemorySpace::Default || space == MemorySpace::Vmem;
}

// Block dims as numbers (squeezed = 1), or nullopt if any is unknown.
std::optional<std::vector<int64_t>> block_dims(const Operand& op) {
  std::vector<int64_t> dims;
  if (op.block.whole_array) {
    if (!op.array_shape) return std::nullopt;
    for (const auto& d : *op.array_shape) {
      if (!d) return std::nullopt;
      dims.push_back(*d);
    }
    return dims;
  }
  if (!op.block.shape) return std::nullopt;
  for (const pallas::Dim& d : *op.block.shape) {
    if (d.squeezed) {
      dims.push_back(1);
    } else if (d.size) {
      dims.push_back(*d.size);
    } else {
      return std::nullopt;
    }
  }
  return dims;
}

int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

}  // namespace

std::optional<int64_t> block_bytes(const Operand& op) {
  auto dims = block_dims(op);
  if (!dims || !op.dtype) return std::nullopt;
  int64_t elements = 1;
  for (int64_t d : *dims) elements *= d;
  return elements * op.dtype->bits / 8;
}

std::optional<int64_t> padded_block_bytes(const Operand& op) {
  auto dims = block_dims(op);
  if (!dims || !op.dtype) return std::nullopt;
  // Squeezed dims vanish from the VMEM buffer; pad the last two that remain.
  std::vector<int64_t> kept;
  if (op.block.whole_array || !op.block.shape) {
    kept = *dims;
  } else {
    for (size_t i = 0; i < dims->size(); ++i) {
      if (!(*op.block.shape)[i].squeezed) kept.push_back((*dims)[i]);
    }
  }
  const int bits = op.dtype->bits;
  const int64_t sublanes = bits >= 32 ? 8 : 8 * (32 / bits);
  if (!kept.empty()) kept.back() = round_up(kept.back(), 128);
  if (kept.size() >= 2) kept[kept.size() - 2] = round_up(kept[kept.size() - 2], sublanes);
  int64_t elements = 1;
  for (int64_t d : kept) elements *= d;
  return elements * bits / 8;
}

std::optional<int64_t> scratch_bytes(const pallas::Scratch& s) {
  Operand as_operand;
  as_operand.dtype = s.dtype;
  as_operand.block.whole_array = true;
  as_operand.array_shape = s.shape;
  return padded_block_bytes(as_operand);
}

std::optional<int64_t> total_grid_steps(const pallas::Kernel& k) {
  if (!k.grid.rank) return std::nullopt;
  int64_t steps = 1;
  for (const auto& e : k.grid.extents) {
    if (!e) return std::nullopt;
    steps *= *e;
  }
  return steps;
}

VmemEstimate estimate_vmem(const pallas::Kernel& k) {
  VmemEstimate est;
  const auto steps = total_grid_steps(k);
  auto add_operand = [&](const Operand& op) {
    if (!lives_in_vmem(op.block.memory_space)) return;
    // One step has nothing to overlap, so Pallas keeps a single buffer; otherwise buffer_count.
    const int buffers = (steps && *steps == 1) ? 1 : op.block.buffer_count;
    VmemPart part{op.label + (buffers > 1 ? " x" + std::to_string(buffers) : ""), std::nullopt};
    if (auto b = padded_block_bytes(op)) {
      part.bytes = *b * buffers;
      est.known_bytes += *part.bytes;
    } else {
      est.complete = false;
    }
    est.parts.push_back(part);
  };
  for (const Operand& op : k.inputs) add_operand(op);
  for (const Operand& op : k.outputs) add_operand(op);
  if (!k.inputs_complete) est.complete = false;
  for (const pallas::Scratch& s : k.scratch) {
    if (s.memory_space != MemorySpace::Vmem) continue;
    VmemPart part{"scratch", scratch_bytes(s)};
    if (part.bytes) {
      est.known_bytes += *part.bytes;
    } else {
      est.complete = false;
    }
    est.parts.push_back(part);
  }
  return est;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  }
  return buf;
}

std::string format_bytes(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else if (bytes < 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.4g KiB", b / 1024);
  } else if (bytes < int64_t{1024} * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.4g MiB", b / (1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.4g GiB", b / (1024.0 * 1024 * 1024));
  }
  return buf;
}

}  // namespace mk::analysis
