// Reuse of kernel extraction across the edits of one document, one top-level statement at a time.
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "source/pallas/kernel_model.h"

namespace mk::pallas {

class Evaluator;

// Remembers, for each top-level statement that holds pallas_call sites, the kernels decoded from
// it and everything they were decoded from: the statement's text, the file-wide backend, and for
// every module-level name the extraction read, the texts of the statements that bind it. A later
// extraction reuses those kernels when all of this is unchanged, with their byte spans moved to
// where those statements are now. The result equals an extraction from scratch (checked by
// tests/unit/model_cache_test.cpp over random edits of the corpus).
class ModelCache {
 public:
  struct PassStats {
    size_t reused = 0;     // statements whose kernels came from the cache
    size_t extracted = 0;  // statements analysed again
  };

  // Appends the remembered kernels of top-level statement `index` to `out` and returns true when
  // nothing they depend on changed; otherwise returns false and appends nothing.
  bool reuse(TSNode statement, uint64_t file_key, Evaluator& eval, std::vector<Kernel>& out);
  // Remembers the kernels just extracted from `statement`; the evaluator's module reads since
  // Evaluator::begin_statement are its dependencies.
  void store(int index, TSNode statement, uint64_t file_key, Evaluator& eval,
             std::vector<Kernel> kernels);
  // Ends one extraction: forgets the statements it did not see, so the cache holds one entry per
  // relevant statement of the current text.
  void finish_pass();

  // Takes in the entries of another cache of the same text (the other half of a split first
  // parse): the next pass keeps those it uses.
  void absorb(ModelCache&& other);

  const PassStats& last_pass() const { return last_pass_; }
  size_t size() const;

 private:
  // A top-level statement the kernels were read from, where it was when they were stored.
  struct Source {
    std::string text;
    uint32_t start = 0;
    uint32_t end = 0;
  };
  // A module-level name the extraction read: its bindings' statements, as indices into sources.
  struct Dependency {
    std::string name;
    std::vector<size_t> sources;
  };
  struct Entry {
    uint64_t file_key = 0;
    TSSymbol symbol = 0;
    std::vector<Source> sources;  // [0] is the statement itself
    std::vector<Dependency> dependencies;
    std::vector<Kernel> kernels;
    bool used = true;
  };

  // Where each source starts now, or false when a dependency changed.
  bool current_starts(const Entry& entry, TSNode statement, Evaluator& eval,
                      std::vector<uint32_t>& starts) const;

  std::unordered_map<std::string, std::vector<Entry>> entries_;  // by statement text
  PassStats pass_, last_pass_;
};

}  // namespace mk::pallas
