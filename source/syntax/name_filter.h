// A quick test that a word of source text is certainly none of a set of names, made before the
// set's hash lookup: most words of a module are none of the names a lexical pass looks for.
#pragma once

#include <bitset>
#include <cstddef>
#include <string_view>

namespace mk::syntax {

class NameFilter {
 public:
  void add(std::string_view name) { bits_.set(slot(name)); }
  // False: not one of the names added. True: maybe.
  bool may_contain(std::string_view word) const { return bits_.test(slot(word)); }

 private:
  static constexpr size_t kBits = size_t{1} << 16;
  static size_t slot(std::string_view w) {
    if (w.empty()) return 0;
    auto at = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(w[i])); };
    return (w.size() * 40503u + at(0) * 2654435761u + at(w.size() - 1) * 97u +
            at(w.size() / 2) * 7919u) &
           (kBits - 1);
  }
  std::bitset<kBits> bits_;
};

}  // namespace mk::syntax
