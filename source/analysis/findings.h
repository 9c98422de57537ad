// Static findings about Pallas kernels: plain data, converted to LSP diagnostics or CLI output at
// the edge. Every code is documented in docs/diagnostics.md.
#pragma once

#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "source/pallas/kernel_model.h"

namespace mk::analysis {

enum class Severity { Error = 1, Warning = 2, Information = 3, Hint = 4 };
const char* to_string(Severity severity);

struct Finding {
  std::string code;  // "MK001"
  Severity severity = Severity::Error;
  pallas::Span span;
  std::string message;
  size_t kernel = 0;  // index into PallasModel::kernels
  friend bool operator==(const Finding&, const Finding&) = default;
};

struct DiagnosticCode {
  const char* code;
  const char* slug;  // anchor in docs/diagnostics.md
  const char* title;
};
const std::vector<DiagnosticCode>& diagnostic_codes();

// Runs every static check on every kernel against the target generation.
std::vector<Finding> check_model(const pallas::PallasModel& model,
                                 const knowledge::TpuGeneration& target);

}  // namespace mk::analysis
