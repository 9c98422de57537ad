#include "lsp/server/document_store.h"

#include <algorithm>

#include "lsp/server/kernel_runs.h"
#include "source/pallas/kernel_extractor.h"
#include "source/pallas/kernel_regions.h"

namespace mk::server {

OpenDocument::OpenDocument(std::string uri, int64_t version, std::string content, bool is_python,
                           service::WrapperModules* wrapper_modules)
    : text(std::move(uri), version, std::move(content)),
      python(is_python),
      wrappers(wrapper_modules) {
  if (python) first_parse();
}

OpenDocument::OpenDocument(int64_t version, ClosedDocument closed,
                           service::WrapperModules* wrapper_modules)
    : text(std::move(closed.uri), version, std::move(closed.text)),
      tree(std::move(closed.tree)),
      model_cache(std::move(closed.model_cache)),
      wrappers(wrapper_modules) {}

void OpenDocument::first_parse() {
  const std::string& t = text.text();
  if (t.size() < kPartialParseBytes) return tree.parse(t);
  const pallas::KernelRegionFinder finder(t);
  // Sites of another file's wrapper mention its name: find those names from the imports alone.
  std::vector<std::string> callees;
  if (const std::vector<syntax::ByteSpan> imports = finder.imports();
      wrappers && !imports.empty()) {
    syntax::PythonTree import_tree;
    import_tree.parse_partial(t, imports);
    for (const auto& [qualified, f] : imported_forwarders(import_tree.root(), nullptr))
      callees.push_back(qualified.substr(qualified.rfind('.') + 1));
  }
  const pallas::KernelRegions regions = finder.regions(callees);
  if (regions.bytes > t.size() / 2) return tree.parse(t);
  tree.parse_partial(t, regions.spans);
  // A syntax error, real or from a misread boundary: the first diagnostics must still be right.
  if (tree.has_error()) tree.parse(t);
}

pallas::ForwarderSet OpenDocument::imported_forwarders(TSNode root,
                                                       std::vector<std::filesystem::path>* used) {
  // A few stat calls per import, and one read per module file until it changes.
  const auto path = path_of_uri(text.uri());
  if (!wrappers || !path) return {};
  return wrappers->forwarders_for(pallas::imported_names(root, text.text()), path->parent_path(),
                                  used);
}

const analysis::DocumentAnalysis& OpenDocument::analyse(const knowledge::TpuGeneration& target) {
  if (!analysis || analysed_target != target.name) {
    wrapper_files.clear();
    forwarders = imported_forwarders(tree.root(), &wrapper_files);
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

void DocumentStore::forget_last_closed() {
  if (last_closed_) release_(last_closed_->tree.take());
  last_closed_.reset();
}

void DocumentStore::close(const std::string& uri) {
  auto it = documents_.find(uri);
  if (it == documents_.end()) return;
  std::unique_ptr<OpenDocument> doc = std::move(it->second);
  documents_.erase(it);
  forget_last_closed();
  if (!doc->python || doc->text.text().size() > kKeptOnCloseBytes)
    return release_(doc->tree.take());
  // A partial tree is kept too: reopened, its full parse starts again after the first
  // diagnostics (one still running for it is adopted if it comes first: the text is the same).
  last_closed_ = ClosedDocument{uri, std::string(doc->text.text()), std::move(doc->tree),
                                std::move(doc->model_cache)};
}

OpenDocument& DocumentStore::open(const std::string& uri, int64_t version, std::string text,
                                  bool python) {
  std::unique_ptr<OpenDocument> doc;
  if (last_closed_ && python && last_closed_->uri == uri && last_closed_->text == text) {
    doc = std::make_unique<OpenDocument>(version, std::move(*last_closed_), &wrappers_);
    last_closed_.reset();
    ++reopened_unparsed_;
  } else {
    forget_last_closed();  // another document, or another text: the user has moved on
    doc = std::make_unique<OpenDocument>(uri, version, std::move(text), python, &wrappers_);
  }
  OpenDocument& ref = *doc;
  documents_[uri] = std::move(doc);
  return ref;
}

OpenDocument* DocumentStore::find(const std::string& uri) {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : it->second.get();
}

}  // namespace mk::server
