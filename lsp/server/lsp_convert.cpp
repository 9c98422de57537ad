#include "lsp/server/lsp_convert.h"

#include "lsp/server/commands.h"
#include "source/analysis/describe.h"
#include "source/analysis/doc_links.h"

namespace mk::server {

using nlohmann::json;

namespace {

json to_position(const text::TextDocument& doc, size_t offset) {
  const auto p = doc.position_of(offset);
  return {{"line", p.line}, {"character", p.character}};
}

bool contains(pallas::Span span, size_t offset) {
  return offset >= span.start && offset <= span.end;
}

}  // namespace

json to_range(const text::TextDocument& doc, pallas::Span span) {
  return {{"start", to_position(doc, span.start)}, {"end", to_position(doc, span.end)}};
}

json to_diagnostics(const text::TextDocument& doc, const analysis::DocumentAnalysis& a) {
  json out = json::array();
  for (const analysis::Finding& f : a.findings) {
    out.push_back({{"range", to_range(doc, f.span)},
                   {"severity", static_cast<int>(f.severity)},
                   {"code", f.code},
                   {"codeDescription", {{"href", analysis::diagnostic_doc_url(f.code)}}},
                   {"source", "maxkernel"},
                   {"message", f.message}});
  }
  return out;
}

json to_code_lenses(const text::TextDocument& doc, const analysis::DocumentAnalysis& a) {
  json out = json::array();
  for (size_t i = 0; i < a.model.kernels.size(); ++i) {
    const pallas::Kernel& k = a.model.kernels[i];
    const json range = to_range(doc, k.call_span);
    const json argument = {
        {"uri", doc.uri()}, {"kernel", i}, {"name", k.name}, {"version", doc.version()}};
    for (const KernelCommand& c : kernel_commands()) {
      out.push_back(
          {{"range", range},
           {"command",
            {{"title", c.title}, {"command", c.id}, {"arguments", json::array({argument})}}}});
    }
  }
  return out;
}

json to_inlay_hints(const text::TextDocument& doc, const analysis::DocumentAnalysis& a,
                    const knowledge::TpuGeneration& target, size_t range_start, size_t range_end) {
  json out = json::array();
  for (const pallas::Kernel& k : a.model.kernels) {
    if (k.site_span.end < range_start || k.site_span.start > range_end) continue;
    for (const analysis::InlayLabel& l : analysis::inlay_labels(k, target)) {
      if (l.offset < range_start || l.offset > range_end) continue;
      out.push_back({{"position", to_position(doc, l.offset)},
                     {"label", l.label},
                     {"kind", 1},
                     {"paddingLeft", true},
                     {"tooltip", l.tooltip}});
    }
  }
  return out;
}

json to_document_symbols(const text::TextDocument& doc, const analysis::DocumentAnalysis& a,
                         bool hierarchical) {
  json out = json::array();
  for (const pallas::Kernel& k : a.model.kernels) {
    const pallas::Span whole = k.site_span;
    const pallas::Span selection = k.call_span;
    const std::string name =
        k.name + (k.enclosing_function.empty() ? "" : " (in " + k.enclosing_function + ")");
    if (hierarchical) {
      out.push_back({{"name", name},
                     {"detail", analysis::kernel_summary(k)},
                     {"kind", 12},  // Function
                     {"range", to_range(doc, whole)},
                     {"selectionRange", to_range(doc, selection)}});
    } else {
      out.push_back({{"name", name},
                     {"kind", 12},
                     {"location", {{"uri", doc.uri()}, {"range", to_range(doc, whole)}}}});
    }
  }
  return out;
}

const pallas::Kernel* kernel_at(const analysis::DocumentAnalysis& a, size_t offset) {
  const pallas::Kernel* best = nullptr;
  for (const pallas::Kernel& k : a.model.kernels) {
    const bool hit = contains(k.site_span, offset) ||
                     (k.kernel_name_span && contains(*k.kernel_name_span, offset));
    // Prefer the innermost match (a pallas_call nested in a kernel def's body, say).
    if (hit && (!best ||
                k.site_span.end - k.site_span.start < best->site_span.end - best->site_span.start))
      best = &k;
  }
  return best;
}

json to_lsp_diagnostic(const service::Finding& finding) {
  return {{"range",
           {{"start", {{"line", finding.line}, {"character", 0}}},
            {"end", {{"line", finding.line}, {"character", 1000}}}}},
          {"severity", static_cast<int>(finding.severity)},
          {"code", finding.code},
          {"source", "maxkernel"},
          {"message", finding.message}};
}

}  // namespace mk::server
