// A canonical form of Python source for content hashing (evaluation cache, dedupe of candidate
// kernels): comments dropped, trailing whitespace and blank lines removed, CRLF -> LF.
#pragma once

#include <string>
#include <string_view>

namespace mk::syntax {

std::string normalized_python_source(std::string_view source);

}  // namespace mk::syntax
