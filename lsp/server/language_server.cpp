#include "lsp/server/language_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "lsp/protocol/message_json.h"
#include "lsp/server/kernel_runs.h"
#include "lsp/server/lsp_convert.h"

namespace mk::server {

using nlohmann::json;
using rpc::ParamReader;
using rpc::Reply;
namespace ec = rpc::error_code;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kSlowTurn = std::chrono::milliseconds(100);

}  // namespace

LanguageServer::LanguageServer(ServerOptions options, std::function<void(std::string_view)> sink)
    : options_(options),
      writer_(std::move(sink)),
      dispatcher_([this](const json& m) { send(m); }),
      outgoing_([this](const json& m) { send(m); }),
      trees_([this](std::function<void()> task) { queue_.push(rpc::Task(std::move(task))); }),
      progress_(
          [this](const std::string& method, json params) { notify(method, std::move(params)); },
          outgoing_),
      optimizations_(*this, workspace_, progress_),
      hitl_(*this, workspace_, outgoing_, client_, progress_),
      writing_(*this, progress_),
      runs_(*this, workspace_, progress_) {
  documents_.set_tree_release([this](syntax::TreePtr tree) { trees_.release(std::move(tree)); });
  register_handlers();
  if (options_.enable_test_methods) register_test_methods();
}

LanguageServer::~LanguageServer() = default;

size_t LanguageServer::partly_parsed() {
  size_t n = 0;
  for (auto& [uri, doc] : documents_.all()) n += doc->tree.partial() ? 1 : 0;
  return n;
}

void LanguageServer::send(const json& message) {
  // Invalid UTF-8 from a document must not make serialisation throw: replace it.
  writer_.write(message.dump(-1, ' ', false, json::error_handler_t::replace));
}

void LanguageServer::notify(const std::string& method, json params) {
  send(rpc::make_notification(method, std::move(params)));
}

void LanguageServer::post(std::function<void()> task) {
  queue_.push(rpc::Task(std::move(task)));
}

OpenDocument* LanguageServer::find_document(const std::string& uri) {
  return documents_.find(uri);
}

void LanguageServer::request(const std::string& method, json params, ResponseHandler handler) {
  outgoing_.send(method, std::move(params), std::move(handler), options_.client_request_timeout);
}

void LanguageServer::republish(const std::string& uri) {
  dirty_.push_back(uri);
}

LlmChoice LanguageServer::llm() const {
  return {llm_spec_of(settings_.llm), llm_api_key_};
}

bool LanguageServer::cancel_kernel_job(const std::string& job) {
  return runs_.cancel_job(job);
}

std::shared_ptr<tpu::HostPool> LanguageServer::borrow_hosts(std::string& error) {
  return runs_.shared_host(error);
}

const knowledge::TpuGeneration& LanguageServer::target() const {
  const auto* gen = knowledge::find_tpu_generation(settings_.target);
  return gen ? *gen : knowledge::tpu_generations().front();
}

// ----- loop ---------------------------------------------------------------------------------

void LanguageServer::reader_loop(rpc::ByteSource& input) {
  rpc::FrameReader reader(input, options_.max_message_bytes);
  for (;;) {
    rpc::FrameReader::Result r = reader.next();
    if (r.status == rpc::FrameReader::Status::Eof) {
      if (!r.error.empty()) spdlog::warn("input: {}", r.error);
      queue_.push(rpc::EndOfInput{});
      return;
    }
    if (r.status == rpc::FrameReader::Status::Error) {
      spdlog::warn("input: {}", r.error);
      continue;
    }
    if (!r.error.empty()) spdlog::warn("input: {}", r.error);
    json message;
    try {
      message = rpc::parse_message(r.body);
    } catch (const json::parse_error& e) {
      spdlog::warn("input: message is not valid JSON: {}", e.what());
      send(rpc::make_error_response(nullptr,
                                    {ec::kParseError, std::string("parse error: ") + e.what()}));
      continue;
    }
    if (!message.is_object()) {
      dispatcher_.reject_invalid(message, "a JSON-RPC message must be an object");
      continue;
    }
    const bool has_id = message.contains("id");
    if (has_id && !message["id"].is_string() && !message["id"].is_number_integer() &&
        !message["id"].is_null()) {
      dispatcher_.reject_invalid(message, "id must be a string or an integer");
      continue;
    }
    if (message.contains("method")) {
      if (!message["method"].is_string()) {
        dispatcher_.reject_invalid(message, "method must be a string");
        continue;
      }
      // Some clients send `"params": null` (e.g. with exit); treat it as absent.
      if (message.contains("params") && message["params"].is_null()) message.erase("params");
      if (message.contains("params") && !message["params"].is_object() &&
          !message["params"].is_array()) {
        if (has_id) {
          send(rpc::make_error_response(
              message["id"], {ec::kInvalidParams, "params must be an object or an array"}));
        }
        continue;
      }
      if (message["method"] == "$/cancelRequest") {
        // Handled here, so a request the main loop is busy with sees its token flip.
        dispatcher_.cancel_request(message);
        continue;
      }
      queue_.push(std::move(message));
    } else if (has_id && (message.contains("result") || message.contains("error"))) {
      queue_.push(std::move(message));  // a response to one of our requests
    } else {
      dispatcher_.reject_invalid(message, "neither a request, a notification nor a response");
    }
  }
}

int LanguageServer::run(rpc::ByteSource& input) {
  // Shared, not on this stack: a detached reader still sets it when its read returns.
  auto reader_done = std::make_shared<std::atomic<bool>>(false);
  std::thread reader([this, &input, reader_done] {
    reader_loop(input);
    *reader_done = true;
  });
  bool input_ended = false;
  while (!exit_requested_ && !input_ended) {
    auto deadline = outgoing_.expire(Clock::now()).value_or(Clock::now() + std::chrono::hours(1));
    std::optional<rpc::Event> event = queue_.pop(deadline);
    if (!event) continue;
    const auto started = Clock::now();
    std::string what = "task";
    if (auto* message = std::get_if<json>(&*event)) {
      what = message->value("method", std::string("response"));
      handle_message(*message);
    } else if (auto* task = std::get_if<rpc::Task>(&*event)) {
      (*task)();
    } else {
      input_ended = true;
    }
    if (queue_.empty()) flush_dirty_documents();
    const auto took = Clock::now() - started;
    if (took > kSlowTurn) {
      spdlog::warn("slow main-loop turn: {} took {} ms", what,
                   std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    }
  }
  runs_.cancel_all();
  optimizations_.shutdown();  // cancelled runs stay resumable; their workers are stopped
  outgoing_.fail_all("the server is exiting");
  if (input_ended || *reader_done) {
    reader.join();  // it queued end of input, so it has returned or is about to
  } else {
    reader.detach();  // blocked on a read of stdin; the process is about to exit
  }
  if (input_ended && !exit_requested_) spdlog::info("input closed without exit");
  return shutdown_requested_ ? 0 : 1;
}

void LanguageServer::handle_message(json& message) {
  if (!message.contains("method")) {
    if (!outgoing_.handle_response(message))
      spdlog::debug("response to unknown request {}", message["id"].dump());
    return;
  }
  dispatcher_.dispatch(message);
}

bool LanguageServer::edit_pending(const std::string& uri) const {
  return queue_.any_message([&](const json& m) {
    if (m.value("method", "") != "textDocument/didChange" &&
        m.value("method", "") != "textDocument/didClose") {
      return false;
    }
    try {
      return m.at("params").at("textDocument").at("uri") == uri;
    } catch (const json::exception&) {
      return false;
    }
  });
}

void LanguageServer::flush_dirty_documents() {
  auto dirty = std::move(dirty_);
  dirty_.clear();
  for (const std::string& uri : dirty) {
    if (OpenDocument* doc = documents_.find(uri)) publish_diagnostics(*doc);
  }
}

void LanguageServer::publish_diagnostics(OpenDocument& doc) {
  json diagnostics = diagnostics_of(doc);
  doc.published_diagnostics = diagnostics.dump();
  notify("textDocument/publishDiagnostics", {{"uri", doc.text.uri()},
                                             {"version", doc.text.version()},
                                             {"diagnostics", std::move(diagnostics)}});
  // Only now: on two cores the first diagnostics must not share theirs with the full parse.
  if (doc.tree.partial() && !doc.full_parse_started) start_full_parse(doc);
}

void LanguageServer::start_full_parse(OpenDocument& doc) {
  doc.full_parse_started = true;
  const std::string uri = doc.text.uri();
  const uint64_t generation = doc.tree.generation();
  trees_.parse_in_full(doc.text.text(), doc.tree.copy(),
                       [this, uri, generation](syntax::TreePtr full) {
                         adopt_full_tree(uri, generation, std::move(full));
                       });
}

void LanguageServer::adopt_full_tree(const std::string& uri, uint64_t generation,
                                     syntax::TreePtr full) {
  OpenDocument* doc = documents_.find(uri);
  if (!doc || !doc->tree.partial() || doc->tree.generation() != generation)
    return trees_.release(std::move(full));  // closed, reopened or replaced meanwhile
  for (syntax::TreePtr& tree : doc->adopt_full(std::move(full))) trees_.release(std::move(tree));
  // Equal unless an edit made meanwhile reached beyond the kernels' statements.
  if (diagnostics_of(*doc).dump() != doc->published_diagnostics &&
      std::find(dirty_.begin(), dirty_.end(), uri) == dirty_.end())
    dirty_.push_back(uri);
}

OpenDocument& LanguageServer::document_for(const ParamReader& params) {
  const std::string uri = params.object("textDocument").string("uri");
  OpenDocument* doc = documents_.find(uri);
  if (!doc)
    throw rpc::RpcError(ec::kInvalidParams,
                        "params.textDocument.uri: document is not open: " + uri);
  if (edit_pending(uri))
    throw rpc::RpcError(ec::kContentModified, "the document changed; request again");
  return *doc;
}

// ----- handlers -----------------------------------------------------------------------------

void LanguageServer::register_handlers() {
  dispatcher_.set_request_gate([this](const std::string& method) -> std::optional<rpc::Error> {
    if (method == "initialize") {
      if (initialized_) return rpc::Error{ec::kInvalidRequest, "initialize was already called"};
      return std::nullopt;
    }
    if (!initialized_)
      return rpc::Error{ec::kServerNotInitialized, "the server is not initialized"};
    if (shutdown_requested_) return rpc::Error{ec::kInvalidRequest, "the server is shutting down"};
    return std::nullopt;
  });
  dispatcher_.set_notification_gate(
      [this](const std::string& method) { return initialized_ || method == "exit"; });

  // Each method's handler: lifecycle_requests.cpp, document_sync.cpp, document_requests.cpp,
  // command_requests.cpp.
  using Request = void (LanguageServer::*)(const ParamReader&, Reply);
  using Notification = void (LanguageServer::*)(const ParamReader&);
  static constexpr std::pair<const char*, Request> kRequests[] = {
      {"initialize", &LanguageServer::on_initialize},
      {"shutdown", &LanguageServer::on_shutdown},
      {"textDocument/hover", &LanguageServer::on_hover},
      {"textDocument/codeLens", &LanguageServer::on_code_lens},
      {"textDocument/codeAction", &LanguageServer::on_code_action},
      {"textDocument/inlayHint", &LanguageServer::on_inlay_hint},
      {"textDocument/documentSymbol", &LanguageServer::on_document_symbol},
      {"maxkernel/sessions", &LanguageServer::on_sessions},
      {"maxkernel/status", &LanguageServer::on_status},
      {"workspace/executeCommand", &LanguageServer::on_execute_command},
  };
  static constexpr std::pair<const char*, Notification> kNotifications[] = {
      {"initialized", &LanguageServer::on_initialized},
      {"exit", &LanguageServer::on_exit},
      {"maxkernel/setApiKey", &LanguageServer::on_set_api_key},
      {"textDocument/didOpen", &LanguageServer::on_did_open},
      {"textDocument/didChange", &LanguageServer::on_did_change},
      {"textDocument/didSave", &LanguageServer::on_did_save},
      {"textDocument/didClose", &LanguageServer::on_did_close},
      {"workspace/didChangeWatchedFiles", &LanguageServer::on_did_change_watched_files},
      {"workspace/didChangeConfiguration", &LanguageServer::on_did_change_configuration},
      {"window/workDoneProgress/cancel", &LanguageServer::on_work_done_progress_cancel},
  };
  // (Entries, not structured bindings: clang before 16 cannot capture a binding in a lambda.)
  for (const auto& entry : kRequests) {
    const Request handler = entry.second;
    dispatcher_.on_request(
        entry.first, [this, handler](const ParamReader& p, Reply r) { (this->*handler)(p, r); });
  }
  for (const auto& entry : kNotifications) {
    const Notification handler = entry.second;
    dispatcher_.on_notification(entry.first,
                                [this, handler](const ParamReader& p) { (this->*handler)(p); });
  }
}

void LanguageServer::refresh_after_run(const std::string& uri) {
  dirty_.push_back(uri);
  if (client_.inlay_hint_refresh) {
    outgoing_.send("workspace/inlayHint/refresh", nullptr, [](const json*, const rpc::Error*) {});
  }
  if (client_.code_lens_refresh) {
    outgoing_.send("workspace/codeLens/refresh", nullptr, [](const json*, const rpc::Error*) {});
  }
}

void LanguageServer::register_test_methods() {
  // A long request that honours cancellation, to test $/cancelRequest deterministically.
  dispatcher_.on_request("maxkernel/test/sleep", [](const ParamReader& p, Reply r) {
    const auto until = Clock::now() + std::chrono::milliseconds(p.integer("ms"));
    while (Clock::now() < until) {
      if (r.token().cancelled()) return r.error(ec::kRequestCancelled, "cancelled");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    r.result({{"slept", true}});
  });
  // Makes the server send any request to the client and report what came back.
  dispatcher_.on_request("maxkernel/test/clientRequest", [this](const ParamReader& p, Reply r) {
    const json* request_params = p.optional_raw("params");
    outgoing_.send(
        p.string("method"), request_params ? *request_params : json(nullptr),
        [r](const json* result, const rpc::Error* error) {
          if (error)
            return r.result({{"error", {{"code", error->code}, {"message", error->message}}}});
          r.result({{"result", *result}});
        },
        std::chrono::milliseconds(p.optional_integer("timeoutMs").value_or(30000)));
  });
  dispatcher_.on_request("maxkernel/test/forgetToReply", [](const ParamReader&, Reply) {});
  // Holds the full parses of large documents (their first parse stays partial) until released.
  dispatcher_.on_request("maxkernel/test/holdFullParses", [this](const ParamReader& p, Reply r) {
    const json* hold = p.optional_raw("hold");
    if (!hold || !hold->is_boolean()) p.fail("hold", "expected a boolean");
    trees_.hold(hold->get<bool>());
    r.result({{"held", *hold}});
  });
}

}  // namespace mk::server
