// Engine and service results -> LSP JSON (diagnostics, hover, lenses, inlay hints, symbols,
// workspace edits). The only place where plain structs meet protocol shapes; the other server
// files build only the envelopes of our own commands.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "service/finding.h"
#include "service/kernel_diagnosis.h"
#include "source/analysis/document_analysis.h"
#include "source/text/text_document.h"

namespace mk::server {

nlohmann::json to_range(const text::TextDocument& doc, pallas::Span span);
nlohmann::json to_diagnostics(const text::TextDocument& doc, const analysis::DocumentAnalysis& a);
nlohmann::json to_code_lenses(const text::TextDocument& doc, const analysis::DocumentAnalysis& a);
nlohmann::json to_inlay_hints(const text::TextDocument& doc, const analysis::DocumentAnalysis& a,
                              const knowledge::TpuGeneration& target, size_t range_start,
                              size_t range_end);
nlohmann::json to_document_symbols(const text::TextDocument& doc,
                                   const analysis::DocumentAnalysis& a, bool hierarchical);
// The one mapping of severities to LSP's DiagnosticSeverity.
int to_lsp_severity(service::Severity severity);
int to_lsp_severity(analysis::Severity severity);
// A service finding as a diagnostic: over its span when it has one, else over its whole line;
// its related lines become relatedInformation in the same document.
nlohmann::json to_lsp_diagnostic(const text::TextDocument& doc, const service::Finding& finding);
nlohmann::json to_inlay_hint(const text::TextDocument& doc, size_t offset, const std::string& label,
                             const std::string& tooltip);
// A kernel's diagnosis as an inlay hint at `offset`: the short label (" (stale)" appended when
// the kernel changed since), the full summary as its tooltip.
nlohmann::json to_diagnosis_hint(const text::TextDocument& doc, size_t offset,
                                 const service::KernelDiagnosis& diagnosis, bool stale);
// The hover section of a kernel's diagnosis: a heading naming where it comes from (`origin`,
// e.g. "Profile on local"), whether it is stale, and the full summary as a list.
std::string diagnosis_markdown(const service::KernelDiagnosis& diagnosis, const std::string& origin,
                               bool stale);
nlohmann::json to_hover(const text::TextDocument& doc, pallas::Span span,
                        const std::string& markdown, bool markdown_kind);
nlohmann::json to_code_lens(const text::TextDocument& doc, pallas::Span span,
                            const std::string& title, const std::string& command,
                            const nlohmann::json& argument);

// Workspace edits from plain parts.
struct TextEdit {
  text::Utf16Position start, end;
  std::string new_text;
};
// The replacement of the bytes [start, end) of `doc`.
TextEdit text_edit(const text::TextDocument& doc, size_t start, size_t end, std::string new_text);
// The edits that turn `doc` into `after`, one per run of changed lines (text::line_diff), in the
// document's UTF-16 positions: what every proposed edit sends, so a preview shows only them.
std::vector<TextEdit> minimal_edits(const text::TextDocument& doc, std::string_view after);
struct DocumentEdits {
  std::string uri;
  std::optional<int64_t> version;  // unset: a file this edit creates (or any version)
  bool create = false;             // create the file first (never overwriting one)
  std::vector<TextEdit> edits;
};
struct EditAnnotation {
  std::string id, label, description;  // the edit waits for the user's confirmation
};
// documentChanges (versioned, creates) when `document_changes`, else the plain `changes` map;
// with `annotation` every change carries it (documentChanges only).
nlohmann::json to_workspace_edit(const std::vector<DocumentEdits>& documents, bool document_changes,
                                 const EditAnnotation* annotation = nullptr);
// The kernel whose pallas_call or def contains `offset`, if any.
const pallas::Kernel* kernel_at(const analysis::DocumentAnalysis& a, size_t offset);

}  // namespace mk::server
