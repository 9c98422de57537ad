#include "cli/github_annotations.h"

namespace mk::cli {

namespace {

// Workflow commands escape %, CR and LF in the message, and also ':' and ',' in properties.
std::string escape(const std::string& text, bool property) {
  std::string out;
  for (char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else if (property && c == ':')
      out += "%3A";
    else if (property && c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

const char* command_for(analysis::Severity s) {
  switch (s) {
    case analysis::Severity::Error:
      return "error";
    case analysis::Severity::Warning:
      return "warning";
    case analysis::Severity::Information:
    case analysis::Severity::Hint:
      return "notice";
  }
  return "notice";
}

}  // namespace

std::string github_annotation(const AnalysedFile& file, const analysis::Finding& finding) {
  const auto start = file.position(finding.span.start);
  const auto end = file.position(finding.span.end);
  std::string out = std::string("::") + command_for(finding.severity) +
                    " file=" + escape(file.path.generic_string(), true) +
                    ",line=" + std::to_string(start.line + 1) +
                    ",col=" + std::to_string(start.character + 1) +
                    ",endLine=" + std::to_string(end.line + 1);
  if (end.line == start.line) out += ",endColumn=" + std::to_string(end.character + 1);
  out += ",title=" + escape("maxkernel " + finding.code, true) +
         "::" + escape(finding.message + " [" + finding.code + "]", false);
  return out;
}

}  // namespace mk::cli
