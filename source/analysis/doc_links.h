// Where a diagnostic code is documented: docs/diagnostics.md next to the installed binary.
#pragma once

#include <string>
#include <string_view>

namespace mk::analysis {

// A file:// URL to docs/diagnostics.md#anchor for the code (found relative to the running
// executable: build/bin/../../docs), or a repository-relative path when the docs are not there.
std::string diagnostic_doc_url(std::string_view code);

}  // namespace mk::analysis
