// Open documents: text, syntax tree (reparsed incrementally on every change) and the latest
// analysis, recomputed lazily when the text has moved on.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "knowledge/tpu_generations.h"
#include "source/analysis/document_analysis.h"
#include "source/syntax/python_tree.h"
#include "source/text/text_document.h"

namespace mk::server {

struct OpenDocument {
  OpenDocument(std::string uri, int64_t version, std::string text, bool python);

  text::TextDocument text;
  syntax::PythonTree tree;
  bool python = true;
  std::optional<analysis::DocumentAnalysis> analysis;  // reset by every edit
  std::string analysed_target;
  // Per-statement extraction results kept across edits: an edit re-analyses only the
  // pallas_call statements whose text, or whose module-level inputs, it changed.
  pallas::ModelCache model_cache;

  // The analysis for the current text and target, computed on demand.
  const analysis::DocumentAnalysis& analyse(const knowledge::TpuGeneration& target);
};

class DocumentStore {
 public:
  OpenDocument& open(const std::string& uri, int64_t version, std::string text, bool python);
  OpenDocument* find(const std::string& uri);
  void close(const std::string& uri) { documents_.erase(uri); }
  std::map<std::string, std::unique_ptr<OpenDocument>>& all() { return documents_; }

 private:
  std::map<std::string, std::unique_ptr<OpenDocument>> documents_;
};

}  // namespace mk::server
