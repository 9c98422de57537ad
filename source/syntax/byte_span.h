// A half-open range of bytes in a document.
#pragma once

#include <cstdint>

namespace mk::syntax {

struct ByteSpan {
  uint32_t start = 0;
  uint32_t end = 0;
  friend bool operator==(const ByteSpan&, const ByteSpan&) = default;
};

}  // namespace mk::syntax
