#include "cli/sarif.h"

#include "source/analysis/doc_links.h"

namespace mk::cli {

namespace {

const char* sarif_level(analysis::Severity s) {
  switch (s) {
    case analysis::Severity::Error:
      return "error";
    case analysis::Severity::Warning:
      return "warning";
    case analysis::Severity::Information:
    case analysis::Severity::Hint:
      return "note";
  }
  return "none";
}

}  // namespace

nlohmann::json to_sarif(const std::vector<AnalysedFile>& files, const std::string& target) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& c : analysis::diagnostic_codes()) {
    rules.push_back({{"id", c.code},
                     {"name", c.slug},
                     {"shortDescription", {{"text", c.title}}},
                     {"helpUri", analysis::diagnostic_doc_url(c.code)}});
  }
  nlohmann::json results = nlohmann::json::array();
  for (const AnalysedFile& f : files) {
    for (const analysis::Finding& d : f.analysis.findings) {
      const auto start = f.position(d.span.start);
      const auto end = f.position(d.span.end);
      results.push_back({{"ruleId", d.code},
                         {"level", sarif_level(d.severity)},
                         {"message", {{"text", d.message}}},
                         {"locations",
                          {{{"physicalLocation",
                             {{"artifactLocation", {{"uri", f.path.generic_string()}}},
                              {"region",
                               {{"startLine", start.line + 1},
                                {"startColumn", start.character + 1},
                                {"endLine", end.line + 1},
                                {"endColumn", end.character + 1}}}}}}}}});
    }
  }
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           {{{"tool",
              {{"driver",
                {{"name", "maxkernel"},
                 {"version", "0.1.0"},
                 {"informationUri", "https://docs.jax.dev/en/latest/pallas/index.html"},
                 {"rules", rules}}}}},
             {"columnKind", "utf16CodeUnits"},
             {"properties", {{"target", target}}},
             {"results", results}}}}};
}

}  // namespace mk::cli
