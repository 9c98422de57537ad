// Keeps API keys out of every log line, error message, describe() string and recorded fixture.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mk::llm {

inline constexpr std::string_view kRedacted = "[REDACTED]";

// Replaces every occurrence of each secret (empty ones are ignored) and every token shaped like a
// provider key (sk-..., sk-ant-..., AIza...), even a partly masked echo of one, with [REDACTED].
std::string redact(std::string_view text, const std::vector<std::string>& secrets);

}  // namespace mk::llm
