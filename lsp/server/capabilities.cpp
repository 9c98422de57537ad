#include "lsp/server/capabilities.h"

#include "lsp/server/commands.h"

namespace mk::server {

namespace {

// Reads a boolean at a path of keys; anything missing or mistyped is false.
bool flag(const nlohmann::json& root, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &root;
  for (const char* key : path) {
    if (!node->is_object()) return false;
    auto it = node->find(key);
    if (it == node->end()) return false;
    node = &*it;
  }
  return node->is_boolean() && node->get<bool>();
}

}  // namespace

ClientCapabilities resolve_client_capabilities(const nlohmann::json& c) {
  ClientCapabilities caps;
  caps.apply_edit = flag(c, {"workspace", "applyEdit"});
  caps.document_changes = flag(c, {"workspace", "workspaceEdit", "documentChanges"});
  caps.change_annotations =
      c.is_object() && c.contains("workspace") && c["workspace"].is_object() &&
      c["workspace"].contains("workspaceEdit") && c["workspace"]["workspaceEdit"].is_object() &&
      c["workspace"]["workspaceEdit"].contains("changeAnnotationSupport");
  caps.configuration = flag(c, {"workspace", "configuration"});
  caps.work_done_progress = flag(c, {"window", "workDoneProgress"});
  caps.show_document = flag(c, {"window", "showDocument", "support"});
  caps.show_message_request = c.is_object() && c.contains("window") && c["window"].is_object() &&
                              c["window"].contains("showMessage");
  caps.code_action_resolve =
      c.is_object() && c.contains("textDocument") && c["textDocument"].is_object() &&
      c["textDocument"].contains("codeAction") && c["textDocument"]["codeAction"].is_object() &&
      c["textDocument"]["codeAction"].contains("resolveSupport");
  caps.code_lens_refresh = flag(c, {"workspace", "codeLens", "refreshSupport"});
  caps.inlay_hint_refresh = flag(c, {"workspace", "inlayHint", "refreshSupport"});
  caps.hierarchical_symbols =
      flag(c, {"textDocument", "documentSymbol", "hierarchicalDocumentSymbolSupport"});
  caps.diagnostic_version = flag(c, {"textDocument", "publishDiagnostics", "versionSupport"});
  try {
    const auto& formats = c.at("textDocument").at("hover").at("contentFormat");
    for (const auto& f : formats) {
      if (f == "markdown") caps.markdown_hover = true;
    }
  } catch (const nlohmann::json::exception&) {
    caps.markdown_hover = false;
  }
  return caps;
}

nlohmann::json server_capabilities() {
  nlohmann::json commands = nlohmann::json::array();
  for (const auto& c : kernel_commands()) commands.push_back(c.id);
  for (const char* c : run_commands()) commands.push_back(c);
  return {
      {"positionEncoding", "utf-16"},
      {"textDocumentSync",
       {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
      {"hoverProvider", true},
      {"codeLensProvider", {{"resolveProvider", false}}},
      {"codeActionProvider",
       {{"codeActionKinds", nlohmann::json::array({"quickfix", "refactor.rewrite"})}}},
      {"inlayHintProvider", true},
      {"documentSymbolProvider", true},
      {"executeCommandProvider", {{"commands", commands}}},
  };
}

}  // namespace mk::server
