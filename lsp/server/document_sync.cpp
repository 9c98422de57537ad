// Document synchronisation: didOpen, didChange, didSave, didClose and watched files, one
// function each; every change marks the documents whose diagnostics must be published again.
#include <spdlog/spdlog.h>

#include "lsp/server/language_server.h"
#include "lsp/server/position_params.h"

namespace mk::server {

using nlohmann::json;
using rpc::ParamReader;
using rpc::Reply;

void LanguageServer::on_did_open(const ParamReader& params) {
  const ParamReader td = params.object("textDocument");
  const std::string uri = td.string("uri");
  const std::string language = td.optional_string("languageId").value_or("python");
  const bool python = language == "python" || uri.ends_with(".py");
  documents_.open(uri, td.optional_integer("version").value_or(0), td.take_string("text"), python);
  dirty_.push_back(uri);
  wrapper_file_changed(uri);  // its open text now wins over the disk's
}

void LanguageServer::wrapper_file_changed(const std::string& uri) {
  for (std::string& affected : documents_.file_changed(uri)) dirty_.push_back(std::move(affected));
}

void LanguageServer::on_did_change(const ParamReader& params) {
  const ParamReader td = params.object("textDocument");
  const std::string uri = td.string("uri");
  OpenDocument* doc = documents_.find(uri);
  if (!doc) {
    spdlog::warn("didChange for a document that is not open: {}", uri);
    return;
  }
  const json& changes = params.raw("contentChanges");
  if (!changes.is_array()) params.fail("contentChanges", "expected an array");
  for (size_t i = 0; i < changes.size(); ++i) {
    const ParamReader change(changes[i],
                             params.path() + ".contentChanges[" + std::to_string(i) + "]");
    const std::string new_text = change.string("text");
    if (change.optional_raw("range")) {
      const text::ByteEdit edit =
          doc->text.apply_change(read_range(change.object("range")), new_text);
      if (doc->python) doc->reparse_edit(edit);
    } else {
      doc->text.replace_all(new_text);
      if (doc->python)
        for (syntax::TreePtr& tree : doc->reparse_all()) trees_.release(std::move(tree));
    }
  }
  if (auto version = td.optional_integer("version")) doc->text.set_version(*version);
  doc->invalidate_analysis();
  dirty_.push_back(uri);
  wrapper_file_changed(uri);
}

void LanguageServer::on_did_save(const ParamReader& params) {
  const std::string uri = params.object("textDocument").string("uri");
  if (OpenDocument* doc = documents_.find(uri)) {
    if (doc->python) doc->analyse(target());
    runs_.on_save(*doc);
  }
  wrapper_file_changed(uri);
}

void LanguageServer::on_did_close(const ParamReader& params) {
  const std::string uri = params.object("textDocument").string("uri");
  documents_.close(uri);
  notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
  wrapper_file_changed(uri);  // the disk's text is the module's again
}

// Sent by clients that watch the workspace's files for us (e.g. a wrapper module saved by
// another tool); each changed file's wrappers are described again.
void LanguageServer::on_did_change_watched_files(const ParamReader& params) {
  const json& changes = params.raw("changes");
  if (!changes.is_array()) params.fail("changes", "expected an array");
  for (const json& change : changes) {
    if (change.is_object() && change.contains("uri") && change["uri"].is_string())
      wrapper_file_changed(change["uri"].get<std::string>());
  }
}

}  // namespace mk::server
