// What is statically known about each Pallas kernel in a Python document. Plain data: no
// tree-sitter handles, no protocol types. Locations are byte offsets into the document's text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mk::pallas {

struct Span {
  uint32_t start = 0;
  uint32_t end = 0;
  bool empty() const { return start == end; }
  friend bool operator==(const Span&, const Span&) = default;
};

enum class Backend { Tpu, TritonGpu, MosaicGpu };
enum class MemorySpace { Default, Vmem, Smem, Any, Hbm, Semaphore, Gpu, Unknown };

const char* to_string(Backend backend);
const char* to_string(MemorySpace space);

struct DType {
  std::string name;  // canonical: "float32", "bfloat16", "int8", ...
  int bits = 0;
  friend bool operator==(const DType&, const DType&) = default;
};
std::optional<DType> dtype_from_name(std::string_view name);

// One dimension of a block or array: a known size, a squeezed (None) dimension, or unknown.
struct Dim {
  std::optional<int64_t> size;
  bool squeezed = false;
  std::string text;  // source text, for messages about unknowns
  friend bool operator==(const Dim&, const Dim&) = default;
};

struct IndexMap {
  std::optional<int> arity;        // parameter count; nullopt if *args or unresolvable
  int required_arity = 0;          // parameters without a default
  std::optional<int> result_rank;  // number of returned indices, if a literal tuple
  Span span;                       // the lambda / def
  Span result_span;                // the returned expression (lambda body or `return` line)
  std::string text;
  friend bool operator==(const IndexMap&, const IndexMap&) = default;
};

struct BlockSpec {
  bool whole_array = false;               // no BlockSpec given: the whole array is one block
  std::optional<std::vector<Dim>> shape;  // nullopt: unknown (or none given)
  Span shape_span;
  std::optional<IndexMap> index_map;
  MemorySpace memory_space = MemorySpace::Default;
  int buffer_count = 2;  // pipeline buffers (pl.Buffered(n)); 2 = double-buffered
  Span span;             // the BlockSpec(...) expression, wherever it is written
  Span entry_span;       // its entry in in_specs / out_specs (`spec` in `in_specs=[spec, spec]`)
  friend bool operator==(const BlockSpec&, const BlockSpec&) = default;
};

struct Operand {
  std::string label;  // "x", "out 0"
  bool is_output = false;
  std::optional<std::vector<std::optional<int64_t>>> array_shape;  // nullopt: unknown rank
  std::optional<DType> dtype;
  std::string unknown_because;  // why the array shape or dtype is unknown
  BlockSpec block;
  friend bool operator==(const Operand&, const Operand&) = default;
};

struct Scratch {
  std::string kind;  // "VMEM", "SMEM", "DMA semaphore", ...
  MemorySpace memory_space = MemorySpace::Unknown;
  std::optional<std::vector<std::optional<int64_t>>> shape;
  std::optional<DType> dtype;
  Span span;
  friend bool operator==(const Scratch&, const Scratch&) = default;
};

struct Grid {
  std::optional<size_t> rank;
  std::vector<std::optional<int64_t>> extents;
  Span span;
  friend bool operator==(const Grid&, const Grid&) = default;
};

struct Kernel {
  std::string name;  // kernel function name, "<lambda>" or "?"
  std::string enclosing_function;
  Span call_span;                        // the `pl.pallas_call` callee expression
  Span site_span;                        // the whole pallas_call(...) (or partial(...)) expression
  std::optional<Span> kernel_def_span;   // the kernel's def or lambda
  std::optional<Span> kernel_name_span;  // the def's name
  Backend backend = Backend::Tpu;
  Grid grid;
  bool prefetch_grid_spec = false;
  int num_scalar_prefetch = 0;
  bool inputs_complete = false;  // the list of inputs is fully known
  std::vector<Operand> inputs;
  std::vector<Operand> outputs;
  std::vector<Scratch> scratch;
  std::optional<std::vector<std::string>> dimension_semantics;
  Span dimension_semantics_span;
  std::optional<int64_t> vmem_limit_bytes;
  std::optional<bool> interpret;
  bool has_input_output_aliases = false;
  std::vector<std::string> unknowns;  // what could not be determined, in words
  friend bool operator==(const Kernel&, const Kernel&) = default;
};

// JAXBench / MaxKernel task conventions a file provides, for the issues that run kernels.
struct TaskConventions {
  bool config = false, create_inputs = false, workload = false, get_flops = false,
       tuned_params = false, get_inputs = false, computation = false, reference = false,
       make_inputs = false;
  std::string form() const;  // "jaxbench", "maxkernel", "infile", "" when none
  friend bool operator==(const TaskConventions&, const TaskConventions&) = default;

  // Each convention's module-level name and the flag its binding sets.
  struct Binding {
    std::string_view name;
    bool TaskConventions::*flag;
  };
  static const std::vector<Binding>& bindings();
};

struct PallasModel {
  std::vector<Kernel> kernels;
  TaskConventions task;
  bool syntax_errors = false;
  friend bool operator==(const PallasModel&, const PallasModel&) = default;

  // The kernel with this name, or nullptr.
  const Kernel* kernel_named(const std::string& name) const {
    for (const auto& k : kernels)
      if (k.name == name) return &k;
    return nullptr;
  }
};

}  // namespace mk::pallas
