// The bundled corpus: knowledge/corpus/*.md, embedded in the binaries at build time
// (embed_corpus.cmake) and indexed into a store on first use (Store::ensure_bundled_corpus).
#pragma once

#include <span>

namespace mk::knowledge {

struct BundledDocument {
  const char* source;   // "bundled/<file name>"
  const char* content;  // markdown
};

std::span<const BundledDocument> bundled_corpus();
// A hash of the bundled files' names and contents; changes whenever any of them changes.
const char* bundled_corpus_version();

}  // namespace mk::knowledge
