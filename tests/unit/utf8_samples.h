// Characters whose UTF-8 and UTF-16 lengths differ, shared by the text tests.
#pragma once

#include <string>

namespace mk::text::samples {

inline const std::string kE = "\xC3\xA9";              // "é": 2 bytes, 1 UTF-16 unit
inline const std::string kSun = "\xE6\x97\xA5";        // "日": 3 bytes, 1 unit
inline const std::string kSmile = "\xF0\x9F\x98\x80";  // "😀": 4 bytes, 2 units (a surrogate pair)

}  // namespace mk::text::samples
