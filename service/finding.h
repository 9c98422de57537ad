// A finding on a line of a document, as the service layer reports it: plain data that only the
// language server's conversion code turns into an LSP diagnostic (and the CLI into text).
#pragma once

#include <string>

namespace mk::service {

enum class Severity { Error = 1, Warning = 2, Information = 3, Hint = 4 };

struct Finding {
  int line = 0;  // 0-based; the whole line is meant
  Severity severity = Severity::Error;
  std::string code;  // "MK310"
  std::string message;
};

}  // namespace mk::service
