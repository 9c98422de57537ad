// Fuzzes the Pallas source model on arbitrary (mostly broken) Python: parse, extract every
// pallas_call, run the static checks and build the hover / inlay / summary text for every
// kernel on every TPU generation. Nothing may crash, hang (run.sh bounds each input with
// -timeout) or produce a span outside the document.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "knowledge/tpu_generations.h"
#include "source/analysis/describe.h"
#include "source/analysis/document_analysis.h"
#include "source/analysis/vmem.h"
#include "source/syntax/normalize.h"
#include "source/syntax/python_tree.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "pallas model property violated: %s\n", what);
    std::abort();
  }
}

void check_span(const mk::pallas::Span& s, size_t size, const char* what) {
  check(s.start <= s.end && s.end <= size, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  mk::syntax::PythonTree tree;
  tree.parse(source);
  const auto& generations = mk::knowledge::tpu_generations();
  const auto analysis = mk::analysis::analyze_document(tree.root(), source, generations.front());
  for (const auto& kernel : analysis.model.kernels) {
    check_span(kernel.call_span, size, "call_span");
    check_span(kernel.site_span, size, "site_span");
    check_span(kernel.grid.span, size, "grid span");
    if (kernel.kernel_def_span) check_span(*kernel.kernel_def_span, size, "kernel_def_span");
    for (const auto* operands : {&kernel.inputs, &kernel.outputs}) {
      for (const auto& op : *operands) {
        check_span(op.block.span, size, "block span");
        check_span(op.block.shape_span, size, "block shape span");
        if (op.block.index_map) check_span(op.block.index_map->span, size, "index map span");
      }
    }
    mk::analysis::kernel_summary(kernel);
    mk::analysis::estimate_vmem(kernel);
    mk::analysis::total_grid_steps(kernel);
    for (const auto& gen : generations) {
      mk::analysis::hover_markdown(kernel, gen);
      for (const auto& label : mk::analysis::inlay_labels(kernel, gen))
        check(label.offset <= size, "inlay label offset");
    }
  }
  for (const auto& finding : analysis.findings) {
    check_span(finding.span, size, "finding span");
    check(finding.kernel < std::max<size_t>(analysis.model.kernels.size(), 1), "finding kernel");
  }
  mk::syntax::normalized_python_source(source);
  return 0;
}
