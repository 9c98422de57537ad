#include <algorithm>
#include <array>

#include "source/analysis/findings.h"
#include "source/analysis/vmem.h"

namespace mk::analysis {

using pallas::Backend;
using pallas::Kernel;
using pallas::MemorySpace;
using pallas::Operand;

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Information:
      return "info";
    case Severity::Hint:
      return "hint";
  }
  return "?";
}

const std::vector<DiagnosticCode>& diagnostic_codes() {
  static const std::vector<DiagnosticCode> codes = {
      {"MK000", "mk000-syntax-error", "Python syntax error (maxkernel check only)"},
      {"MK001", "mk001-block-shape-tiling", "Block shape breaks the TPU (8, 128) tiling rule"},
      {"MK002", "mk002-sub-native-tile", "Block sublane dim is below the dtype's native tile"},
      {"MK003", "mk003-index-map-arity",
       "index_map takes a different number of arguments than the grid has"},
      {"MK004", "mk004-dimension-semantics-length",
       "dimension_semantics length differs from the grid rank"},
      {"MK005", "mk005-dimension-semantics-value", "Unknown dimension_semantics value"},
      {"MK006", "mk006-block-rank", "Block rank differs from the array rank"},
      {"MK007", "mk007-vmem-over-limit", "Estimated VMEM per grid step exceeds the target's limit"},
      {"MK008", "mk008-index-map-results",
       "index_map returns a different number of indices than the block has dims"},
  };
  return codes;
}

namespace {

std::string render_shape(const std::vector<pallas::Dim>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += dims[i].squeezed ? "None" : dims[i].size ? std::to_string(*dims[i].size) : dims[i].text;
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::string render_array(const std::vector<std::optional<int64_t>>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += dims[i] ? std::to_string(*dims[i]) : "?";
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

bool in_vmem(const Operand& op) {
  return op.block.memory_space == MemorySpace::Default ||
         op.block.memory_space == MemorySpace::Vmem;
}

class KernelChecker {
 public:
  KernelChecker(const Kernel& k, size_t index, const knowledge::TpuGeneration& target,
                std::vector<Finding>& out)
      : k_(k), index_(index), target_(target), out_(out) {}

  void run() {
    const bool tpu = k_.backend == Backend::Tpu;
    // Interpret mode runs the kernel as plain JAX: Mosaic's block rules and VMEM do not apply.
    const bool mosaic = tpu && !(k_.interpret && *k_.interpret);
    for (const Operand* op : operands()) {
      check_block_rank(*op);
      check_index_map(*op);
      if (mosaic && in_vmem(*op)) check_tiling(*op);
    }
    if (tpu) check_dimension_semantics();
    if (mosaic) check_vmem();
  }

 private:
  std::vector<const Operand*> operands() const {
    std::vector<const Operand*> ops;
    for (const Operand& op : k_.inputs) ops.push_back(&op);
    for (const Operand& op : k_.outputs) ops.push_back(&op);
    return ops;
  }

  void add(const char* code, Severity severity, pallas::Span span, std::string message) {
    out_.push_back({code, severity, span, std::move(message), index_});
  }

  // The array's dim at `i`, when the array's rank matches the block's and the dim is known.
  static std::optional<int64_t> array_dim(const Operand& op, size_t i, size_t block_rank) {
    if (!op.array_shape || op.array_shape->size() != block_rank) return std::nullopt;
    return (*op.array_shape)[i];
  }

  void check_tiling(const Operand& op) {
    if (op.block.whole_array || !op.block.shape) return;
    const auto& dims = *op.block.shape;
    const size_t rank = dims.size();
    if (rank == 1) return check_tiling_1d(op);
    if (rank < 2) return;
    struct Rule {
      size_t index;
      int64_t multiple;
      const char* what;
    };
    const std::array<Rule, 2> rules{{{rank - 2, 8, "second-to-last"}, {rank - 1, 128, "last"}}};
    for (const Rule& rule : rules) {
      const pallas::Dim& d = dims[rule.index];
      // A squeezed (None) dim is a block of size 1 as far as Mosaic's tiling is concerned.
      const std::optional<int64_t> size = d.squeezed ? std::optional<int64_t>(1) : d.size;
      if (!size) continue;
      auto full = array_dim(op, rule.index, rank);
      if (*size % rule.multiple == 0 || (full && *full == *size)) continue;
      if (!full) continue;  // may equal the array's dim: unknown, so no claim
      add("MK001", Severity::Error, op.block.shape_span,
          "block " + render_shape(dims) + " of `" + op.label + "`: the " + rule.what + " dim is " +
              (d.squeezed ? std::string("squeezed (size 1)") : std::to_string(*size)) +
              ", neither a multiple of " + std::to_string(rule.multiple) + " nor the array's " +
              std::to_string(*full) + " (array " + render_array(*op.array_shape) +
              "); Mosaic rejects this block shape");
    }
    // Sub-native sublane tiles for packed dtypes (a hint: legal but relayouts cost time).
    if (!op.dtype || op.dtype->bits >= 32) return;
    const pallas::Dim& sub = dims[rank - 2];
    if (sub.squeezed || !sub.size || *sub.size % 8 != 0) return;
    const int64_t native = 8 * (32 / op.dtype->bits);
    auto full = array_dim(op, rank - 2, rank);
    // Only when the array's dim is known: a block spanning the whole dim is fine at any size.
    if (*sub.size % native == 0 || !full || *full == *sub.size) return;
    add("MK002", Severity::Hint, op.block.shape_span,
        "block " + render_shape(dims) + " of `" + op.label + "` (" + op.dtype->name +
            "): second-to-last dim " + std::to_string(*sub.size) + " is not a multiple of " +
            std::to_string(native) + ", the native sublane tile for " +
            std::to_string(op.dtype->bits) + "-bit data; expect relayouts or padding");
  }

  // 1-D blocks: the whole array, a multiple of 1024, or a power of two of at least one packed
  // 128-lane row (128 elements for 32-bit data, 256 for 16-bit, 512 for 8-bit).
  void check_tiling_1d(const Operand& op) {
    const pallas::Dim& d = (*op.block.shape)[0];
    if (d.squeezed || !d.size || !op.dtype || !op.array_shape || op.array_shape->size() != 1)
      return;
    const auto full = (*op.array_shape)[0];
    if (!full) return;
    const int64_t n = *d.size;
    const int64_t min_pow2 = 128 * (32 / std::min(op.dtype->bits, 32));
    const bool pow2 = n > 0 && (n & (n - 1)) == 0;
    if (n == *full || n % 1024 == 0 || (pow2 && n >= min_pow2)) return;
    add("MK001", Severity::Error, op.block.shape_span,
        "1-D block (" + std::to_string(n) + ",) of `" + op.label + "` (" + op.dtype->name +
            "): must be the whole array (" + std::to_string(*full) +
            "), a multiple of 1024, or a power of two of at least " + std::to_string(min_pow2));
  }

  void check_block_rank(const Operand& op) {
    if (op.block.whole_array || !op.block.shape || !op.array_shape) return;
    const size_t block_rank = op.block.shape->size();
    const size_t array_rank = op.array_shape->size();
    if (block_rank == array_rank) return;
    add("MK006", Severity::Error, op.block.shape_span,
        "block " + render_shape(*op.block.shape) + " of `" + op.label + "` has rank " +
            std::to_string(block_rank) + " but the array " + render_array(*op.array_shape) +
            " has rank " + std::to_string(array_rank) + " (use None for squeezed dims)");
  }

  void check_index_map(const Operand& op) {
    if (!op.block.index_map) return;
    const pallas::IndexMap& m = *op.block.index_map;
    if (m.arity && k_.grid.rank) {
      const int expected = static_cast<int>(*k_.grid.rank) + k_.num_scalar_prefetch;
      if (expected < m.required_arity || expected > *m.arity) {
        std::string why = "the grid has rank " + std::to_string(*k_.grid.rank);
        if (k_.num_scalar_prefetch > 0) {
          why += " plus " + std::to_string(k_.num_scalar_prefetch) + " scalar-prefetch ref" +
                 (k_.num_scalar_prefetch > 1 ? "s" : "");
        }
        add("MK003", Severity::Error, m.span,
            "index_map of `" + op.label + "` takes " + std::to_string(*m.arity) + " argument" +
                (*m.arity == 1 ? "" : "s") + " but " + why + ", so it must take " +
                std::to_string(expected));
      }
    }
    if (m.result_rank && op.block.shape && !op.block.whole_array) {
      const auto block_rank = static_cast<int>(op.block.shape->size());
      if (*m.result_rank != block_rank) {
        add("MK008", Severity::Error, m.result_span,
            "index_map of `" + op.label + "` returns " + std::to_string(*m.result_rank) +
                " indices but the block " + render_shape(*op.block.shape) + " has " +
                std::to_string(block_rank) + " dims");
      }
    }
  }

  void check_dimension_semantics() {
    if (!k_.dimension_semantics) return;
    const auto& sem = *k_.dimension_semantics;
    if (k_.grid.rank && sem.size() != *k_.grid.rank) {
      add("MK004", Severity::Error, k_.dimension_semantics_span,
          "dimension_semantics has " + std::to_string(sem.size()) + " entr" +
              (sem.size() == 1 ? "y" : "ies") + " but the grid has rank " +
              std::to_string(*k_.grid.rank));
    }
    static const std::array<const char*, 4> kValid = {"parallel", "arbitrary", "core_parallel",
                                                      "subcore_parallel"};
    for (const std::string& s : sem) {
      if (std::find(kValid.begin(), kValid.end(), s) != kValid.end()) continue;
      add("MK005", Severity::Error, k_.dimension_semantics_span,
          "dimension_semantics value '" + s +
              "' is not one of 'parallel', 'arbitrary', 'core_parallel', 'subcore_parallel'");
    }
  }

  void check_vmem() {
    const VmemEstimate est = estimate_vmem(k_);
    const auto physical = target_.vmem_bytes;
    const auto limit = k_.vmem_limit_bytes ? k_.vmem_limit_bytes : target_.scoped_vmem_limit();
    const std::string bound = est.complete ? "" : "at least ";
    if (physical && k_.vmem_limit_bytes && *k_.vmem_limit_bytes > *physical) {
      add("MK007", Severity::Warning, k_.call_span,
          "vmem_limit_bytes is " + format_bytes(*k_.vmem_limit_bytes) + " but " + target_.name +
              " has only " + format_bytes(*physical) + " of VMEM per core");
    }
    if (physical && est.known_bytes > *physical) {
      add("MK007", Severity::Error, k_.call_span,
          "VMEM per grid step is " + bound + format_bytes(est.known_bytes) +
              " (blocks x buffers + scratch), more than the " + format_bytes(*physical) +
              " of VMEM on " + target_.name + "; use smaller blocks");
      return;
    }
    if (limit && est.known_bytes > *limit) {
      const std::string source =
          k_.vmem_limit_bytes ? "vmem_limit_bytes" : "the default scoped VMEM limit";
      add("MK007", Severity::Warning, k_.call_span,
          "VMEM per grid step is " + bound + format_bytes(est.known_bytes) +
              " (blocks x buffers + scratch), over " + source + " of " + format_bytes(*limit) +
              " on " + target_.name +
              "; raise vmem_limit_bytes in compiler_params or use smaller blocks");
    }
  }

  const Kernel& k_;
  size_t index_;
  const knowledge::TpuGeneration& target_;
  std::vector<Finding>& out_;
};

}  // namespace

std::vector<Finding> check_model(const pallas::PallasModel& model,
                                 const knowledge::TpuGeneration& target) {
  std::vector<Finding> out;
  for (size_t i = 0; i < model.kernels.size(); ++i)
    KernelChecker(model.kernels[i], i, target, out).run();
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.span.start < b.span.start; });
  return out;
}

}  // namespace mk::analysis
