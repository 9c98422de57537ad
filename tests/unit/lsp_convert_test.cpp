// lsp_convert's shapes for the service's plain structs: a finding over its span (UTF-16) or its
// whole line, its related lines and data, the one severity mapping, and workspace edits in both
// forms an editor may ask for.
#include "lsp/server/lsp_convert.h"

#include <gtest/gtest.h>

namespace mk::server {
namespace {

using nlohmann::json;

TEST(LspConvert, SeveritiesMapToLspNumbersInOnePlace) {
  EXPECT_EQ(to_lsp_severity(service::Severity::Error), 1);
  EXPECT_EQ(to_lsp_severity(service::Severity::Warning), 2);
  EXPECT_EQ(to_lsp_severity(service::Severity::Information), 3);
  EXPECT_EQ(to_lsp_severity(service::Severity::Hint), 4);
  EXPECT_EQ(to_lsp_severity(analysis::Severity::Warning), 2);
  EXPECT_EQ(to_lsp_severity(analysis::Severity::Hint), 4);
}

TEST(LspConvert, AFindingWithASpanCoversItInUtf16) {
  // "é" is two bytes and one UTF-16 unit: the span ends on character 3, not 4 (its bytes).
  const text::TextDocument doc("file:///k.py", 3, "x = 1\nyé = pl.pallas_call(f)\n");
  service::Finding f;
  f.span = pallas::Span{6, 10};
  f.severity = service::Severity::Error;
  f.code = "MK200";
  f.source = "maxkernel (test)";
  f.message = "Test failed on local (mismatch): output 0";
  f.related = {{2, 1, "the mismatching line"}};
  const json d = to_lsp_diagnostic(doc, f);
  EXPECT_EQ(d["range"], json::parse(R"json({"start": {"line": 1, "character": 0},
                                            "end": {"line": 1, "character": 3}})json"));
  EXPECT_EQ(d["severity"], 1);
  EXPECT_EQ(d["code"], "MK200");
  EXPECT_EQ(d["source"], "maxkernel (test)");
  EXPECT_EQ(d["message"], "Test failed on local (mismatch): output 0");
  ASSERT_EQ(d["relatedInformation"].size(), 1u);
  const json& r = d["relatedInformation"][0];
  EXPECT_EQ(r["location"]["uri"], "file:///k.py");
  EXPECT_EQ(r["location"]["range"]["start"]["line"], 1);  // 1-based line 2
  EXPECT_EQ(r["message"], "the mismatching line");
  EXPECT_FALSE(d.contains("data"));
}

TEST(LspConvert, AFindingWithoutASpanCoversItsWholeLine) {
  const text::TextDocument doc("file:///k.py", 1, "a\nb\nc\n");
  service::Finding f;
  f.line = 2;
  f.severity = service::Severity::Information;
  f.code = "MK300";
  f.message = "Auto run r1: 1.4x";
  f.data = {{"run", "r1"}, {"uri", "file:///k.py"}};
  const json d = to_lsp_diagnostic(doc, f);
  EXPECT_EQ(d["range"], json::parse(R"json({"start": {"line": 2, "character": 0},
                                            "end": {"line": 2, "character": 1000}})json"));
  EXPECT_EQ(d["severity"], 3);
  EXPECT_EQ(d["source"], "maxkernel");
  EXPECT_EQ(d["data"], json::parse(R"json({"run": "r1", "uri": "file:///k.py"})json"));
  EXPECT_FALSE(d.contains("relatedInformation"));
}

TEST(LspConvert, WorkspaceEditsAreVersionedOrAPlainChangesMap) {
  const text::TextDocument doc("file:///k.py", 7, "a = 1\nb = 2\n");
  const DocumentEdits edits{"file:///k.py", 7, false, {text_edit(doc, 6, 11, "b = 3")}};

  const json plain = to_workspace_edit({edits}, /*document_changes=*/false);
  EXPECT_EQ(plain, json::parse(R"json({"changes": {"file:///k.py": [
      {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}},
       "newText": "b = 3"}]}})json"));

  const EditAnnotation note{"maxkernel.x", "Apply", "node 3"};
  const json versioned = to_workspace_edit({edits}, /*document_changes=*/true, &note);
  const json& change = versioned["documentChanges"][0];
  EXPECT_EQ(change["textDocument"],
            json::parse(R"json({"uri": "file:///k.py", "version": 7})json"));
  EXPECT_EQ(change["edits"][0]["annotationId"], "maxkernel.x");
  EXPECT_EQ(
      versioned["changeAnnotations"]["maxkernel.x"],
      json::parse(
          R"json({"label": "Apply", "needsConfirmation": true, "description": "node 3"})json"));
}

TEST(LspConvert, ANewFileIsCreatedNeverOverwritten) {
  const DocumentEdits file{
      "file:///k_pallas.py", std::nullopt, true, {{{0, 0}, {0, 0}, "x = 1\n"}}};
  const json edit = to_workspace_edit({file}, /*document_changes=*/true);
  ASSERT_EQ(edit["documentChanges"].size(), 2u);
  EXPECT_EQ(edit["documentChanges"][0],
            json::parse(R"json({"kind": "create", "uri": "file:///k_pallas.py",
                                "options": {"overwrite": false, "ignoreIfExists": false}})json"));
  EXPECT_TRUE(edit["documentChanges"][1]["textDocument"]["version"].is_null());
  EXPECT_FALSE(edit["documentChanges"][1]["edits"][0].contains("annotationId"));
  EXPECT_FALSE(edit.contains("changeAnnotations"));
}

TEST(LspConvert, MinimalEditsCoverOnlyChangedLinesInUtf16Positions) {
  // Line 1 is unchanged non-ASCII; the last line has no newline, so its edit ends mid-line:
  // "x = '😀'" is 10 bytes but 8 UTF-16 units (the emoji is a surrogate pair).
  const text::TextDocument doc("file:///k.py", 2, "a = 1\né = 2\nb = 3\nx = '😀'");
  const std::string after = "a = 1\né = 2\nb = 4\nx = '😀!'";
  const std::vector<TextEdit> edits = minimal_edits(doc, after);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].start.line, 2u);
  EXPECT_EQ(edits[0].start.character, 0u);
  EXPECT_EQ(edits[0].end.line, 3u);
  EXPECT_EQ(edits[0].end.character, 8u);
  EXPECT_EQ(edits[0].new_text, "b = 4\nx = '😀!'");
  EXPECT_TRUE(minimal_edits(doc, doc.text()).empty());

  // A changed line after a non-ASCII one starts at character 0 of its own line.
  const text::TextDocument wide("file:///w.py", 1, "ééé\ny\n");
  const std::vector<TextEdit> second = minimal_edits(wide, "ééé\nz\n");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].start.line, 1u);
  EXPECT_EQ(second[0].start.character, 0u);
  EXPECT_EQ(second[0].end.line, 2u);
  EXPECT_EQ(second[0].end.character, 0u);
}

service::KernelDiagnosis lc_diagnosis() {
  service::KernelDiagnosis d;
  d.label = "HBM-bound \u00b7 21% of roofline";
  d.lines = {"HBM-bound: the model puts compute at 10.9 us, HBM traffic at 51.2 us",
             "re-fetched: args[1] of _matmul 8x along grid axis 0: 28 MiB more reads"};
  return d;
}

TEST(LspConvert, ADiagnosisIsAnInlayHintWithItsSummaryAsTooltip) {
  // "é" is two bytes and one UTF-16 unit: the hint after it sits on character 2, not 3.
  const text::TextDocument doc("file:///k.py", 2, "é)\n");
  const json hint = to_diagnosis_hint(doc, 3, lc_diagnosis(), false);
  EXPECT_EQ(hint["position"], json::parse(R"json({"line": 0, "character": 2})json"));
  EXPECT_EQ(hint["label"], " HBM-bound \u00b7 21% of roofline");
  EXPECT_EQ(hint["kind"], 1);
  EXPECT_EQ(hint["tooltip"],
            "HBM-bound: the model puts compute at 10.9 us, HBM traffic at 51.2 us\n"
            "re-fetched: args[1] of _matmul 8x along grid axis 0: 28 MiB more reads");
  const json stale = to_diagnosis_hint(doc, 3, lc_diagnosis(), true);
  EXPECT_EQ(stale["label"], " HBM-bound \u00b7 21% of roofline (stale)");
  EXPECT_TRUE(
      stale["tooltip"].get<std::string>().starts_with("[stale: the kernel changed since] "));
}

TEST(LspConvert, ADiagnosisInTheHoverIsAListThatKeepsNamesLiteral) {
  const std::string md = diagnosis_markdown(lc_diagnosis(), "Profile on local", false);
  EXPECT_EQ(md,
            "\n---\n**Diagnosis: HBM-bound \u00b7 21% of roofline** (Profile on local)\n\n"
            "- HBM-bound: the model puts compute at 10.9 us, HBM traffic at 51.2 us\n"
            "- re-fetched: args[1] of \\_matmul 8x along grid axis 0: 28 MiB more reads\n");
  const std::string stale = diagnosis_markdown(lc_diagnosis(), "run r1, the baseline", true);
  EXPECT_NE(stale.find("(run r1, the baseline; stale: the kernel changed since)"),
            std::string::npos)
      << stale;
}

}  // namespace
}  // namespace mk::server
