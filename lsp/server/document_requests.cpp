// The document requests, one small function each: read the LSP params, answer from the engine's
// analysis, and let every feature (Feature, in the server's fixed order) add what it shows.
#include "lsp/server/language_server.h"
#include "lsp/server/lsp_convert.h"
#include "lsp/server/position_params.h"
#include "lsp/server/process_memory.h"
#include "source/analysis/describe.h"

namespace mk::server {

using nlohmann::json;
using rpc::ParamReader;
using rpc::Reply;

json LanguageServer::diagnostics_of(OpenDocument& doc) {
  json diagnostics = json::array();
  if (doc.python) {
    const auto& a = doc.analyse(target());
    diagnostics = to_diagnostics(doc.text, a);
    for (const Feature* f : features_) f->add_diagnostics(doc, a, diagnostics);
  }
  return diagnostics;
}

void LanguageServer::on_hover(const ParamReader& params, Reply reply) {
  OpenDocument& doc = document_for(params);
  if (!doc.python) return reply.result(nullptr);
  const size_t offset = doc.text.offset_of(read_position(params.object("position")));
  const auto& a = doc.analyse(target());
  const pallas::Kernel* k = kernel_at(a, offset);
  if (!k) return reply.result(nullptr);
  std::string md = analysis::hover_markdown(*k, target());
  for (const Feature* f : features_) f->add_hover(doc, *k, target(), md);
  reply.result(to_hover(doc.text, k->call_span, md, client_.markdown_hover));
}

void LanguageServer::on_code_lens(const ParamReader& params, Reply reply) {
  OpenDocument& doc = document_for(params);
  if (!doc.python) return reply.result(json::array());
  const auto& a = doc.analyse(target());
  json lenses = to_code_lenses(doc.text, a);
  for (const Feature* f : features_) f->add_code_lenses(doc, a, lenses);
  reply.result(std::move(lenses));
}

void LanguageServer::on_code_action(const ParamReader& params, Reply reply) {
  OpenDocument& doc = document_for(params);
  const json* context = params.object("context").optional_raw("diagnostics");
  if (doc.python) doc.analyse(target());
  json actions = json::array();
  const json none = json::array();
  for (const Feature* f : features_) f->add_code_actions(doc, context ? *context : none, actions);
  reply.result(std::move(actions));
}

void LanguageServer::on_inlay_hint(const ParamReader& params, Reply reply) {
  OpenDocument& doc = document_for(params);
  if (!doc.python) return reply.result(json::array());
  const text::Utf16Range range = read_range(params.object("range"));
  const auto& a = doc.analyse(target());
  json hints = to_inlay_hints(doc.text, a, target(), doc.text.offset_of(range.start),
                              doc.text.offset_of(range.end));
  for (const Feature* f : features_) f->add_inlay_hints(doc, a, hints);
  reply.result(std::move(hints));
}

void LanguageServer::on_document_symbol(const ParamReader& params, Reply reply) {
  OpenDocument& doc = document_for(params);
  if (!doc.python) return reply.result(json::array());
  reply.result(to_document_symbols(doc.text, doc.analyse(target()), client_.hierarchical_symbols));
}

void LanguageServer::on_status(const ParamReader&, Reply reply) {
  const ProcessMemory m = read_process_memory();
  const auto known = [](int64_t bytes) { return bytes >= 0 ? json(bytes) : json(nullptr); };
  json running = json::object();
  for (const Feature* f : features_) running[f->status_name()] = f->running();
  reply.result({{"memory",
                 {{"residentBytes", known(m.resident_bytes)},
                  {"heapInUseBytes", known(m.heap_in_use_bytes)},
                  {"heapHeldBytes", known(m.heap_held_bytes)},
                  {"sqliteBytes", m.sqlite_bytes},
                  {"sqlitePeakBytes", m.sqlite_peak_bytes}}},
                {"threads", m.threads},
                {"openDocuments", documents_.all().size()},
                {"partlyParsedDocuments", partly_parsed()},
                {"reopenedUnparsed", documents_.reopened_unparsed()},
                {"splitFirstParses", documents_.split_first_parses()},
                {"skippedBodyFirstParses", documents_.skipped_body_first_parses()},
                {"runningJobs", std::move(running)},
                {"pendingClientRequests", outgoing_.pending()}});
}

}  // namespace mk::server
