// What the client can do, resolved once from `initialize` so features can degrade gracefully.
#pragma once

#include <nlohmann/json.hpp>

namespace mk::server {

struct ClientCapabilities {
  bool apply_edit = false;
  bool document_changes = false;
  bool change_annotations = false;
  bool configuration = false;
  bool work_done_progress = false;
  bool show_document = false;
  bool show_message_request = false;
  bool code_action_resolve = false;
  bool code_lens_refresh = false;
  bool inlay_hint_refresh = false;
  bool hierarchical_symbols = false;
  bool markdown_hover = false;
  bool diagnostic_version = false;
};

ClientCapabilities resolve_client_capabilities(const nlohmann::json& capabilities);
// The server's answer to `initialize`.
nlohmann::json server_capabilities();

}  // namespace mk::server
