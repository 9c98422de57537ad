#include "lsp/server/document_store.h"

namespace mk::server {

OpenDocument::OpenDocument(std::string uri, int64_t version, std::string content, bool is_python)
    : text(std::move(uri), version, std::move(content)), python(is_python) {
  if (python) tree.parse(text.text());
}

const analysis::DocumentAnalysis& OpenDocument::analyse(const knowledge::TpuGeneration& target) {
  if (!analysis || analysed_target != target.name) {
    analysis = analysis::analyze_document(tree.root(), text.text(), target, &model_cache);
    analysed_target = target.name;
  }
  return *analysis;
}

OpenDocument& DocumentStore::open(const std::string& uri, int64_t version, std::string text,
                                  bool python) {
  auto doc = std::make_unique<OpenDocument>(uri, version, std::move(text), python);
  OpenDocument& ref = *doc;
  documents_[uri] = std::move(doc);
  return ref;
}

OpenDocument* DocumentStore::find(const std::string& uri) {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : it->second.get();
}

}  // namespace mk::server
