#include "source/analysis/doc_links.h"

#include <filesystem>
#include <system_error>

#include "source/analysis/findings.h"

namespace mk::analysis {

namespace {

std::string docs_base() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      // A checkout (ROOT/docs) or an install (PREFIX/share/maxkernel/docs).
      for (const auto& candidate : {dir / "docs" / "diagnostics.md",
                                    dir / "share" / "maxkernel" / "docs" / "diagnostics.md"})
        if (std::filesystem::exists(candidate, ec)) return "file://" + candidate.string();
    }
  }
  // No docs on this machine: the published page (an href must be a URI, never a bare path).
  return docs_https_url("diagnostics.md");
}

}  // namespace

std::string diagnostic_doc_url(std::string_view code) {
  static const std::string base = docs_base();
  for (const DiagnosticCode& c : diagnostic_codes()) {
    if (code == c.code) return base + "#" + c.slug;
  }
  return base;
}

std::string docs_https_url(std::string_view page) {
  return std::string(MAXKERNEL_DOCS_URL) + "/" + std::string(page);
}

std::string diagnostic_help_url(std::string_view code) {
  for (const DiagnosticCode& c : diagnostic_codes()) {
    if (code == c.code) return docs_https_url("diagnostics.md") + "#" + c.slug;
  }
  return docs_https_url("diagnostics.md");
}

}  // namespace mk::analysis
