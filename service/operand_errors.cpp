#include "service/operand_errors.h"

#include <algorithm>
#include <regex>

namespace mk::service {

namespace {

int line_of(const text::LineIndex& lines, uint32_t offset) {
  return static_cast<int>(lines.line_of_offset(offset)) + 1;
}

}  // namespace

std::optional<NamedOperand> operand_named_in(std::string_view message) {
  // JAX: "Block spec for args[2] in pallas_call kp at /x/k.py:5 has block shape ...", and
  // "outputs" (one output) or "outputs[1]" (of a tuple).
  static const std::regex spec(R"(Block spec for (args|outputs)(?:\[(\d+)\])?)");
  static const std::regex where(R"( in pallas_call (\S+) at \S*?:(\d+))");
  const std::string text(message);
  std::smatch m;
  if (!std::regex_search(text, m, spec)) return std::nullopt;
  NamedOperand out;
  out.role = m[1] == "args" ? NamedOperand::Role::Input : NamedOperand::Role::Output;
  out.index = m[2].matched ? std::stoul(m[2].str()) : 0;
  const std::string rest = m.suffix().str();
  std::smatch w;
  if (std::regex_search(rest, w, where) && w.position(0) == 0) {
    out.kernel = w[1].str();
    out.kernel_line = std::stoi(w[2].str());
  }
  return out;
}

std::optional<pallas::Span> operand_entry_span(const pallas::Kernel& kernel,
                                               const NamedOperand& operand) {
  const pallas::Operand* op = nullptr;
  if (operand.role == NamedOperand::Role::Input) {
    // Scalar prefetch operands are counted but have no BlockSpec.
    const size_t prefetch = static_cast<size_t>(std::max(0, kernel.num_scalar_prefetch));
    if (operand.index >= prefetch && operand.index - prefetch < kernel.inputs.size())
      op = &kernel.inputs[operand.index - prefetch];
  } else if (operand.index < kernel.outputs.size()) {
    op = &kernel.outputs[operand.index];
  }
  // A whole-array operand has no entry of its own (no in_specs given).
  if (!op || (op->block.whole_array && !op->block.shape)) return std::nullopt;
  if (!op->block.entry_span.empty()) return op->block.entry_span;
  if (!op->block.span.empty()) return op->block.span;
  return std::nullopt;
}

bool place_on_operand(Finding& finding, std::string_view message, const pallas::PallasModel& model,
                      const text::LineIndex& lines) {
  const std::optional<NamedOperand> operand = operand_named_in(message);
  if (!operand) return false;
  // The kernel the error names: by name and def line, else by name, else the only one.
  const pallas::Kernel* kernel = nullptr;
  for (const pallas::Kernel& k : model.kernels) {
    if (k.name != operand->kernel) continue;
    const bool same_line =
        k.kernel_def_span && line_of(lines, k.kernel_def_span->start) == operand->kernel_line;
    if (!kernel || same_line) kernel = &k;
  }
  if (!kernel && model.kernels.size() == 1) kernel = &model.kernels.front();
  if (!kernel) return false;
  const std::optional<pallas::Span> entry = operand_entry_span(*kernel, *operand);
  if (!entry) return false;
  finding.span = *entry;
  finding.line = line_of(lines, entry->start) - 1;
  finding.related.clear();
  if (kernel->kernel_def_span)
    finding.related.push_back(
        {line_of(lines, kernel->kernel_def_span->start), 1, "the kernel `" + kernel->name + "`"});
  finding.related.push_back({line_of(lines, kernel->call_span.start), 1, "its pallas_call"});
  return true;
}

}  // namespace mk::service
