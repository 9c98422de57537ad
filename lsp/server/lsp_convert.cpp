#include "lsp/server/lsp_convert.h"

#include <algorithm>

#include "lsp/server/commands.h"
#include "source/analysis/describe.h"
#include "source/analysis/doc_links.h"
#include "source/text/line_diff.h"

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
                   {"severity", to_lsp_severity(f.severity)},
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
    const json argument = {
        {"uri", doc.uri()}, {"kernel", i}, {"name", k.name}, {"version", doc.version()}};
    for (const KernelCommand& c : kernel_commands())
      out.push_back(to_code_lens(doc, k.call_span, c.title, c.id, argument));
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
      out.push_back(to_inlay_hint(doc, l.offset, l.label, l.tooltip));
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

int to_lsp_severity(service::Severity severity) {
  switch (severity) {
    case service::Severity::Error:
      return 1;
    case service::Severity::Warning:
      return 2;
    case service::Severity::Information:
      return 3;
    case service::Severity::Hint:
      return 4;
  }
  return 1;
}

int to_lsp_severity(analysis::Severity severity) {
  switch (severity) {
    case analysis::Severity::Error:
      return to_lsp_severity(service::Severity::Error);
    case analysis::Severity::Warning:
      return to_lsp_severity(service::Severity::Warning);
    case analysis::Severity::Information:
      return to_lsp_severity(service::Severity::Information);
    case analysis::Severity::Hint:
      return to_lsp_severity(service::Severity::Hint);
  }
  return 1;
}

namespace {

// A whole line (0-based): where a finding that names only its line is shown.
json whole_line(int line) {
  return {{"start", {{"line", line}, {"character", 0}}},
          {"end", {{"line", line}, {"character", 1000}}}};
}

json to_position(const text::Utf16Position& p) {
  return {{"line", p.line}, {"character", p.character}};
}

}  // namespace

json to_lsp_diagnostic(const text::TextDocument& doc, const service::Finding& finding) {
  json out = {{"range", finding.span ? to_range(doc, *finding.span) : whole_line(finding.line)},
              {"severity", to_lsp_severity(finding.severity)},
              {"code", finding.code},
              {"source", finding.source},
              {"message", finding.message}};
  if (!finding.related.empty()) {
    json related = json::array();
    for (const service::SourceLocation& loc : finding.related) {
      related.push_back(
          {{"location", {{"uri", doc.uri()}, {"range", whole_line(std::max(1, loc.line) - 1)}}},
           {"message", loc.message}});
    }
    out["relatedInformation"] = std::move(related);
  }
  if (!finding.data.empty()) {
    json data = json::object();
    for (const auto& [key, value] : finding.data) data[key] = value;
    out["data"] = std::move(data);
  }
  return out;
}

json to_inlay_hint(const text::TextDocument& doc, size_t offset, const std::string& label,
                   const std::string& tooltip) {
  return {{"position", to_position(doc, offset)},
          {"label", label},
          {"kind", 1},
          {"paddingLeft", true},
          {"tooltip", tooltip}};
}

json to_diagnosis_hint(const text::TextDocument& doc, size_t offset,
                       const service::KernelDiagnosis& diagnosis, bool stale) {
  std::string tooltip;
  for (const std::string& line : diagnosis.lines) tooltip += (tooltip.empty() ? "" : "\n") + line;
  if (stale) tooltip = "[stale: the kernel changed since] " + tooltip;
  return to_inlay_hint(doc, offset, " " + diagnosis.label + (stale ? " (stale)" : ""), tooltip);
}

namespace {

// Plain text inside markdown: names such as `_matmul` or `x_ref` must not turn into emphasis.
std::string markdown_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '_' || c == '*' || c == '`' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string diagnosis_markdown(const service::KernelDiagnosis& diagnosis, const std::string& origin,
                               bool stale) {
  std::string md = "\n---\n**Diagnosis: " + markdown_escaped(diagnosis.label) + "** (" +
                   markdown_escaped(origin);
  md += stale ? "; stale: the kernel changed since)\n\n" : ")\n\n";
  for (const std::string& line : diagnosis.lines) md += "- " + markdown_escaped(line) + "\n";
  return md;
}

json to_hover(const text::TextDocument& doc, pallas::Span span, const std::string& markdown,
              bool markdown_kind) {
  return {{"contents", {{"kind", markdown_kind ? "markdown" : "plaintext"}, {"value", markdown}}},
          {"range", to_range(doc, span)}};
}

json to_code_lens(const text::TextDocument& doc, pallas::Span span, const std::string& title,
                  const std::string& command, const json& argument) {
  return {{"range", to_range(doc, span)},
          {"command",
           {{"title", title}, {"command", command}, {"arguments", json::array({argument})}}}};
}

TextEdit text_edit(const text::TextDocument& doc, size_t start, size_t end, std::string new_text) {
  return {doc.position_of(start), doc.position_of(end), std::move(new_text)};
}

std::vector<TextEdit> minimal_edits(const text::TextDocument& doc, std::string_view after) {
  std::vector<TextEdit> edits;
  for (text::LineReplacement& r : text::line_diff(doc.text(), after))
    edits.push_back(text_edit(doc, r.start, r.end, std::move(r.new_text)));
  return edits;
}

json to_workspace_edit(const std::vector<DocumentEdits>& documents, bool document_changes,
                       const EditAnnotation* annotation) {
  auto edits_of = [&](const DocumentEdits& d, bool annotate) {
    json edits = json::array();
    for (const TextEdit& e : d.edits) {
      json edit = {{"range", {{"start", to_position(e.start)}, {"end", to_position(e.end)}}},
                   {"newText", e.new_text}};
      if (annotate) edit["annotationId"] = annotation->id;
      edits.push_back(std::move(edit));
    }
    return edits;
  };
  json out = json::object();
  if (!document_changes) {
    json changes = json::object();
    for (const DocumentEdits& d : documents) changes[d.uri] = edits_of(d, false);
    out["changes"] = std::move(changes);
    return out;
  }
  json changes = json::array();
  for (const DocumentEdits& d : documents) {
    if (d.create) {
      json create = {{"kind", "create"},
                     {"uri", d.uri},
                     {"options", {{"overwrite", false}, {"ignoreIfExists", false}}}};
      if (annotation) create["annotationId"] = annotation->id;
      changes.push_back(std::move(create));
    }
    changes.push_back(
        {{"textDocument", {{"uri", d.uri}, {"version", d.version ? json(*d.version) : json()}}},
         {"edits", edits_of(d, annotation != nullptr)}});
  }
  out["documentChanges"] = std::move(changes);
  if (annotation)
    out["changeAnnotations"] = {{annotation->id,
                                 {{"label", annotation->label},
                                  {"needsConfirmation", true},
                                  {"description", annotation->description}}}};
  return out;
}

}  // namespace mk::server
