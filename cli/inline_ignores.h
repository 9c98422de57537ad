// `# maxkernel: ignore[MK001, MK007]` (or a bare `# maxkernel: ignore`) on a line silences those
// findings of `maxkernel check` that start on that line, as `# noqa: E501` does for flake8/ruff.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mk::cli {

// Whether line `line` (0-based) of `text` carries an ignore comment covering `code`.
bool ignored_inline(std::string_view text, uint32_t line, const std::string& code);

}  // namespace mk::cli
