// Engine results -> LSP JSON (diagnostics, hover, lenses, inlay hints, symbols). The only place
// where analysis structs meet protocol shapes.
#pragma once

#include <nlohmann/json.hpp>

#include "knowledge/tpu_generations.h"
#include "service/finding.h"
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
// A service finding as a diagnostic over its whole line.
nlohmann::json to_lsp_diagnostic(const service::Finding& finding);
// The kernel whose pallas_call or def contains `offset`, if any.
const pallas::Kernel* kernel_at(const analysis::DocumentAnalysis& a, size_t offset);

}  // namespace mk::server
