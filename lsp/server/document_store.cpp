#include "lsp/server/document_store.h"

#include <algorithm>
#include <future>
#include <utility>

#include "lsp/server/uri.h"
#include "source/pallas/half_models.h"
#include "source/pallas/kernel_extractor.h"
#include "source/pallas/skipped_bodies.h"

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
      other_half(std::move(closed.other_half)),
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
  const pallas::SplitKernelRegions regions = finder.split_regions(callees);
  if (regions.all.bytes > t.size() / 2) return tree.parse(t);
  if (regions.all.bytes >= kSplitParseBytes && !regions.halves[1].spans.empty() &&
      parse_in_halves(regions.halves))
    return;
  tree.parse_partial(t, regions.all.spans);
  // A syntax error, real or from a misread boundary: the first diagnostics must still be right.
  if (tree.has_error()) tree.parse(t);
}

bool OpenDocument::parse_in_halves(const std::array<pallas::KernelRegions, 2>& halves) {
  const std::string& t = text.text();
  struct Second {
    OtherHalf half;
    std::optional<pallas::PallasModel> model;
  };
  // Declared before the promise: should this thread throw, the promise is broken first, so the
  // other thread stops waiting and the future's destructor can join it.
  std::future<Second> second;
  std::promise<const pallas::ForwarderSet*> forwarders_known;
  second = std::async(
      std::launch::async, [&t, &halves, known = forwarders_known.get_future()]() mutable {
        Second out;
        out.half.tree.parse_partial(t, halves[1].spans, pallas::skipped_spans(halves[1].skipped));
        // The wrappers other files define are looked up on this document's thread
        // only.
        const pallas::ForwarderSet* imported = known.get();
        if (imported && !out.half.tree.has_error())
          out.model =
              extract_first(out.half.tree, t, halves[1].skipped, &out.half.model_cache, imported);
        return out;
      });

  tree.parse_partial(t, halves[0].spans, pallas::skipped_spans(halves[0].skipped));
  const bool first_parsed = !tree.has_error();
  if (first_parsed) {
    wrapper_files.clear();
    forwarders = imported_forwarders(tree.root(), &wrapper_files);
  }
  forwarders_known.set_value(first_parsed ? &forwarders : nullptr);
  std::optional<pallas::PallasModel> first;
  if (first_parsed) first = extract_first(tree, t, halves[0].skipped, &model_cache, &forwarders);

  Second other = second.get();
  if (!first || !other.model) {
    model_cache = {};
    return false;  // the trees are small enough to free here: this happens on a syntax error
  }
  first_model_ = pallas::merge_half_models(std::move(*first), tree.root(), std::move(*other.model),
                                           other.half.tree.root());
  other_half = std::move(other.half);
  return true;
}

std::optional<pallas::PallasModel> OpenDocument::extract_first(
    const syntax::PythonTree& half, const std::string& text,
    const std::vector<pallas::SkippedBody>& skipped, pallas::ModelCache* cache,
    const pallas::ForwarderSet* forwarders) {
  // Cached as any: each blank body's def spans its real text, which is what the cache compares.
  pallas::PallasModel model = pallas::extract_pallas_model(half.root(), text, cache, forwarders);
  if (pallas::reads_skipped_body(model, skipped))
    return std::nullopt;  // the caller drops the cache
  return model;
}

pallas::ForwarderSet OpenDocument::imported_forwarders(TSNode root,
                                                       std::vector<std::filesystem::path>* used) {
  // A few stat calls per import, and one read per module file until it changes.
  const auto path = path_of_uri(text.uri());
  if (!wrappers || !path) return {};
  return wrappers->forwarders_for(pallas::imported_names(root, text.text()), path->parent_path(),
                                  used);
}

pallas::PallasModel OpenDocument::extract() {
  if (first_model_) {
    pallas::PallasModel model = std::move(*first_model_);
    first_model_.reset();
    return model;  // its forwarders and wrapper files were found by the first parse
  }
  // Bodies the first parse read as blank are read now: this model is the full parse's.
  tree.read_blanked(text.text());
  if (other_half) other_half->tree.read_blanked(text.text());
  wrapper_files.clear();
  forwarders = imported_forwarders(tree.root(), &wrapper_files);
  pallas::PallasModel model =
      pallas::extract_pallas_model(tree.root(), text.text(), &model_cache, &forwarders);
  if (!other_half) return model;
  return pallas::merge_half_models(
      std::move(model), tree.root(),
      pallas::extract_pallas_model(other_half->tree.root(), text.text(), &other_half->model_cache,
                                   &forwarders),
      other_half->tree.root());
}

const analysis::DocumentAnalysis& OpenDocument::analyse(const knowledge::TpuGeneration& target) {
  if (!analysis || analysed_target != target.name) {
    pallas::PallasModel model = extract();
    std::vector<analysis::Finding> findings = analysis::check_model(model, target);
    analysis = analysis::DocumentAnalysis{std::move(model), std::move(findings)};
    analysed_target = target.name;
  }
  return *analysis;
}

void OpenDocument::invalidate_analysis() {
  analysis.reset();
  first_model_.reset();
}

void OpenDocument::reparse_edit(const text::ByteEdit& edit) {
  tree.edit_and_reparse(edit, text.text());
  if (other_half) other_half->tree.edit_and_reparse(edit, text.text());
  invalidate_analysis();
}

std::vector<syntax::TreePtr> OpenDocument::reparse_all() {
  std::vector<syntax::TreePtr> let_go = take_trees();
  tree.parse(text.text());
  invalidate_analysis();
  return let_go;
}

std::vector<syntax::TreePtr> OpenDocument::adopt_full(syntax::TreePtr full) {
  std::vector<syntax::TreePtr> let_go;
  let_go.push_back(tree.adopt_full(std::move(full), text.text()));
  if (other_half) {
    let_go.push_back(other_half->tree.take());
    model_cache.absorb(std::move(other_half->model_cache));
    other_half.reset();
  }
  invalidate_analysis();
  return let_go;
}

std::vector<syntax::TreePtr> OpenDocument::take_trees() {
  std::vector<syntax::TreePtr> trees;
  trees.push_back(tree.take());
  if (other_half) trees.push_back(other_half->tree.take());
  other_half.reset();
  return trees;
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
    doc->invalidate_analysis();
    affected.push_back(other);
  }
  return affected;
}

void DocumentStore::forget_last_closed() {
  if (last_closed_) {
    release_(last_closed_->tree.take());
    if (last_closed_->other_half) release_(last_closed_->other_half->tree.take());
  }
  last_closed_.reset();
}

void DocumentStore::close(const std::string& uri) {
  auto it = documents_.find(uri);
  if (it == documents_.end()) return;
  std::unique_ptr<OpenDocument> doc = std::move(it->second);
  documents_.erase(it);
  forget_last_closed();
  if (!doc->python || doc->text.text().size() > kKeptOnCloseBytes) {
    for (syntax::TreePtr& tree : doc->take_trees()) release_(std::move(tree));
    return;
  }
  // A partial tree is kept too: reopened, its full parse starts again after the first
  // diagnostics (one still running for it is adopted if it comes first: the text is the same).
  last_closed_ = ClosedDocument{uri, std::string(doc->text.text()), std::move(doc->tree),
                                std::move(doc->model_cache), std::move(doc->other_half)};
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
    if (doc->other_half) ++split_first_parses_;
    if (doc->tree.blanked() || (doc->other_half && doc->other_half->tree.blanked()))
      ++skipped_body_first_parses_;  // nothing has reparsed them yet
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
