// Lowering errors that name one operand of a pallas_call ("Block spec for args[1] in pallas_call
// k at f.py:7 ...") belong on the line of that operand's BlockSpec, not on the kernel's.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/finding.h"
#include "source/pallas/kernel_model.h"
#include "source/text/line_index.h"

namespace mk::service {

struct NamedOperand {
  enum class Role { Input, Output };
  Role role = Role::Input;
  size_t index = 0;     // as the error counts: inputs over all operands (scalar prefetch too)
  std::string kernel;   // the kernel function the error names ("" when it names none)
  int kernel_line = 0;  // 1-based line it gives for that kernel (0: none)
  friend bool operator==(const NamedOperand&, const NamedOperand&) = default;
};

// The operand a lowering error names, if it names one.
std::optional<NamedOperand> operand_named_in(std::string_view message);

// The in_specs / out_specs entry of `kernel` that holds the operand's BlockSpec; nullopt when
// the kernel does not say it (no such entry, or a spec list built elsewhere).
std::optional<pallas::Span> operand_entry_span(const pallas::Kernel& kernel,
                                               const NamedOperand& operand);

// When `finding` (a lowering error of `message`) names an operand of one of `model`'s kernels,
// puts it on that operand's BlockSpec entry and makes the kernel's def line and its
// pallas_call line its related information. Returns false, changing nothing, otherwise.
bool place_on_operand(Finding& finding, std::string_view message, const pallas::PallasModel& model,
                      const text::LineIndex& lines);

}  // namespace mk::service
