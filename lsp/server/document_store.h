// Open documents: text, syntax tree (reparsed incrementally on every change) and the latest
// analysis, recomputed lazily when the text has moved on.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "service/wrapper_modules.h"
#include "source/analysis/document_analysis.h"
#include "source/pallas/kernel_regions.h"
#include "source/syntax/python_tree.h"
#include "source/text/text_document.h"

namespace mk::server {

// The second half of a large document's first parse, made on another thread beside the first
// (pallas::KernelRegionFinder::halves): its own partial tree and extraction cache, kept until the
// full tree is adopted.
struct OtherHalf {
  syntax::PythonTree tree;
  pallas::ModelCache model_cache;
};

// A Python document as it was closed, with its tree and extraction results: opened again
// unchanged (a definition peeked at, a tab closed and reopened), it is not parsed again.
struct ClosedDocument {
  std::string uri;
  std::string text;
  syntax::PythonTree tree;
  pallas::ModelCache model_cache;
  std::optional<OtherHalf> other_half;
};

struct OpenDocument {
  // A Python document of this size or more is first parsed only where its kernels are (see
  // pallas::KernelRegionFinder); the full parse is made off the main loop and adopted.
  static constexpr size_t kPartialParseBytes = 32 * 1024;
  // When its kernels' statements are this much or more, they are parsed and analysed as two
  // halves on two threads, and the two models merged.
  static constexpr size_t kSplitParseBytes = 16 * 1024;

  OpenDocument(std::string uri, int64_t version, std::string text, bool python,
               service::WrapperModules* wrappers);
  // The document closed last, opened again with the same text: its tree and cache are kept.
  OpenDocument(int64_t version, ClosedDocument closed, service::WrapperModules* wrappers);

  text::TextDocument text;
  syntax::PythonTree tree;
  std::optional<OtherHalf> other_half;  // while the tree is the first half of a split parse
  bool python = true;
  std::optional<analysis::DocumentAnalysis> analysis;  // see invalidate_analysis()
  std::string analysed_target;
  // Per-statement extraction results kept across edits: an edit re-analyses only the
  // pallas_call statements whose text, or whose module-level inputs, it changed.
  pallas::ModelCache model_cache;
  // The pallas_call wrappers this document's imports name in other workspace files, found when
  // the analysis is recomputed, and the files they came from (an edit of one re-analyses this).
  service::WrapperModules* wrappers = nullptr;
  pallas::ForwarderSet forwarders;
  std::vector<std::filesystem::path> wrapper_files;
  std::string published_diagnostics;  // the last publishDiagnostics array sent, serialised
  bool full_parse_started = false;    // for a tree first parsed in part

  // The analysis for the current text and target, computed on demand.
  const analysis::DocumentAnalysis& analyse(const knowledge::TpuGeneration& target);
  // The text, or what it reads from other files, changed: analysed again when next asked.
  void invalidate_analysis();

  // An edit already applied to `text`, reparsed incrementally (in both halves of a split parse).
  void reparse_edit(const text::ByteEdit& edit);
  // The whole text replaced: parsed afresh. Returns the trees let go, to be freed elsewhere.
  [[nodiscard]] std::vector<syntax::TreePtr> reparse_all();
  // The full parse of a document first parsed in part, brought up to date with the edits made
  // since. Returns the trees let go.
  [[nodiscard]] std::vector<syntax::TreePtr> adopt_full(syntax::TreePtr full);
  // Hands every tree over (the document is closing).
  [[nodiscard]] std::vector<syntax::TreePtr> take_trees();

 private:
  // The whole text, or only its kernels' statements when that is much less of a large file.
  void first_parse();
  // Both halves parsed and extracted side by side, the second on a thread of its own. False
  // (nothing kept) when a half has a syntax error.
  bool parse_in_halves(const std::array<pallas::KernelRegions, 2>& halves);
  // The model of the current trees: the document's, or both halves' merged.
  pallas::PallasModel extract();
  // A half's first model; nullopt when it needed a body that half read as blank.
  static std::optional<pallas::PallasModel> extract_first(
      const syntax::PythonTree& half, const std::string& text,
      const std::vector<pallas::SkippedBody>& skipped, pallas::ModelCache* cache,
      const pallas::ForwarderSet* forwarders);
  // The wrappers of other files this document's imports name (`root` holds its imports).
  pallas::ForwarderSet imported_forwarders(TSNode root, std::vector<std::filesystem::path>* used);

  // The split first parse's merged model, waiting for the first analysis (no edit since).
  std::optional<pallas::PallasModel> first_model_;
};

class DocumentStore {
 public:
  DocumentStore();

  OpenDocument& open(const std::string& uri, int64_t version, std::string text, bool python);
  OpenDocument* find(const std::string& uri);
  // Keeps a Python document of up to kKeptOnCloseBytes, tree and all, for an unchanged reopen:
  // only the last one closed, and only until another document (or text) opens or closes.
  void close(const std::string& uri);
  static constexpr size_t kKeptOnCloseBytes = 1 << 20;
  // Where the trees this lets go of are freed (a large one takes milliseconds): by default here.
  void set_tree_release(std::function<void(syntax::TreePtr)> release) {
    release_ = std::move(release);
  }
  std::map<std::string, std::unique_ptr<OpenDocument>>& all() { return documents_; }
  // Opens that took the last closed document's tree instead of parsing.
  size_t reopened_unparsed() const { return reopened_unparsed_; }
  // Opens whose first parse was made in two halves side by side.
  size_t split_first_parses() const { return split_first_parses_; }
  // Those of them that read the kernels' bodies as blank (pallas::SkippedBody).
  size_t skipped_body_first_parses() const { return skipped_body_first_parses_; }

  // Workspace folders, for the imports of wrapper modules.
  void set_workspace_roots(std::vector<std::filesystem::path> roots);
  // The text of `uri` (open, or on disk) changed: the documents whose wrappers came from it
  // are re-analysed when next asked. Returns their URIs.
  std::vector<std::string> file_changed(const std::string& uri);

 private:
  void forget_last_closed();  // its tree goes to release_

  std::map<std::string, std::unique_ptr<OpenDocument>> documents_;
  std::optional<ClosedDocument> last_closed_;
  std::function<void(syntax::TreePtr)> release_ = [](syntax::TreePtr) {};
  size_t reopened_unparsed_ = 0;
  size_t split_first_parses_ = 0;
  size_t skipped_body_first_parses_ = 0;
  // Open documents' texts win over the disk's.
  service::WrapperModules wrappers_;
};

}  // namespace mk::server
