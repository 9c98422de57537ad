// Where a diagnostic code is documented: docs/diagnostics.md next to the installed binary.
#pragma once

#include <string>
#include <string_view>

namespace mk::analysis {

// A file:// URL to docs/diagnostics.md#anchor for the code (found relative to the running
// executable: build/bin/../../docs, or an install's share/maxkernel/docs), or the published
// page (docs_https_url) when the docs are not there: always an absolute URI.
std::string diagnostic_doc_url(std::string_view code);

// The published docs (https, the MAXKERNEL_DOCS_URL build setting), for output read on other
// machines: SARIF's helpUri, `check --format json`'s "doc".
std::string docs_https_url(std::string_view page);  // "diagnostics.md" -> ".../docs/diagnostics.md"
std::string diagnostic_help_url(std::string_view code);

}  // namespace mk::analysis
