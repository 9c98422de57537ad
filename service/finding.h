// A finding in a document, as the service layer reports it: plain data that only the language
// server's conversion code turns into an LSP diagnostic (and the CLI into text).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "source/pallas/kernel_model.h"

namespace mk::service {

// The one severity scale of findings (the values are LSP's DiagnosticSeverity, which
// lsp_convert maps in one place).
enum class Severity { Error = 1, Warning = 2, Information = 3, Hint = 4 };

// A place in the same file a finding points at: 1-based line and column, as workers name them.
struct SourceLocation {
  int line = 0;
  int column = 0;
  std::string message;
};

struct Finding {
  int line = 0;  // 0-based; the whole line is meant unless `span` is set
  Severity severity = Severity::Error;
  std::string code;  // "MK310"
  std::string message;
  std::string source = "maxkernel";     // which check said it: "maxkernel (test)"
  std::optional<pallas::Span> span;     // byte offsets in the document, when it covers a span
  std::vector<SourceLocation> related;  // the lines the finding is about
  std::vector<std::pair<std::string, std::string>> data;  // handed back with code actions
};

}  // namespace mk::service
