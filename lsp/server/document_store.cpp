#include "lsp/server/document_store.h"

#include <algorithm>

#include "lsp/server/kernel_runs.h"
#include "source/pallas/kernel_extractor.h"

namespace mk::server {

OpenDocument::OpenDocument(std::string uri, int64_t version, std::string content, bool is_python)
    : text(std::move(uri), version, std::move(content)), python(is_python) {
  if (python) tree.parse(text.text());
}

const analysis::DocumentAnalysis& OpenDocument::analyse(const knowledge::TpuGeneration& target) {
  if (!analysis || analysed_target != target.name) {
    wrapper_files.clear();
    if (wrappers) {
      // A few stat calls per import, and one read per module file until it changes.
      const auto path = path_of_uri(text.uri());
      forwarders = path ? wrappers->forwarders_for(pallas::imported_names(tree.root(), text.text()),
                                                   path->parent_path(), &wrapper_files)
                        : pallas::ForwarderSet{};
    }
    analysis =
        analysis::analyze_document(tree.root(), text.text(), target, &model_cache, &forwarders);
    analysed_target = target.name;
  }
  return *analysis;
}

DocumentStore::DocumentStore()
    : wrappers_([this](const std::filesystem::path& file) -> std::optional<std::string> {
        if (OpenDocument* doc = find(file_uri(file))) return std::string(doc->text.text());
        return service::WrapperModules::read_from_disk(file);
      }) {}

void DocumentStore::set_workspace_roots(std::vector<std::filesystem::path> roots) {
  wrappers_.set_roots(std::move(roots));
}

std::vector<std::string> DocumentStore::file_changed(const std::string& uri) {
  std::vector<std::string> affected;
  const auto path = path_of_uri(uri);
  if (!path) return affected;
  const std::filesystem::path file = path->lexically_normal();
  wrappers_.forget(file);
  for (auto& [other, doc] : documents_) {
    if (other == uri) continue;
    const auto& files = doc->wrapper_files;
    if (std::find(files.begin(), files.end(), file) == files.end()) continue;
    doc->analysis.reset();
    affected.push_back(other);
  }
  return affected;
}

void DocumentStore::close(const std::string& uri) {
  documents_.erase(uri);
}

OpenDocument& DocumentStore::open(const std::string& uri, int64_t version, std::string text,
                                  bool python) {
  auto doc = std::make_unique<OpenDocument>(uri, version, std::move(text), python);
  doc->wrappers = &wrappers_;
  OpenDocument& ref = *doc;
  documents_[uri] = std::move(doc);
  return ref;
}

OpenDocument* DocumentStore::find(const std::string& uri) {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : it->second.get();
}

}  // namespace mk::server
