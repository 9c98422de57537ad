#include "lsp/server/language_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "lsp/protocol/message_json.h"
#include "lsp/server/commands.h"
#include "lsp/server/kernel_runs.h"
#include "lsp/server/lsp_convert.h"
#include "lsp/server/position_params.h"
#include "lsp/server/uri.h"

namespace mk::server {

using nlohmann::json;
using rpc::ParamReader;
using rpc::Reply;
namespace ec = rpc::error_code;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kSlowTurn = std::chrono::milliseconds(100);

// The folders of the workspace (workspaceFolders, else rootUri, else rootPath).
std::vector<std::filesystem::path> workspace_roots(const ParamReader& params) {
  std::vector<std::filesystem::path> roots;
  if (const json* folders = params.optional_raw("workspaceFolders");
      folders && folders->is_array()) {
    for (const json& f : *folders) {
      if (!f.is_object() || !f.contains("uri") || !f["uri"].is_string()) continue;
      if (auto path = path_of_uri(f["uri"].get<std::string>())) roots.push_back(*path);
    }
  }
  if (roots.empty()) {
    if (const json* root = params.optional_raw("rootUri"); root && root->is_string()) {
      if (auto path = path_of_uri(root->get<std::string>())) roots.push_back(*path);
    } else if (const json* root_path = params.optional_raw("rootPath");
               root_path && root_path->is_string()) {
      roots.emplace_back(root_path->get<std::string>());
    }
  }
  return roots;
}

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

// ----- configuration ------------------------------------------------------------------------

void LanguageServer::apply_configuration(const json& value) {
  const std::string before = settings_.target;
  std::vector<std::string> problems;
  apply_settings(value, settings_, problems);
  for (const std::string& p : problems)
    notify("window/showMessage", {{"type", 2}, {"message", "MaxKernel: " + p}});
  runs_.configure(host_settings());
  if (settings_.target != before) {
    spdlog::info("target generation: {}", settings_.target);
    for (auto& [uri, doc] : documents_.all()) {
      if (doc->python) dirty_.push_back(uri);
    }
    if (client_.inlay_hint_refresh) {
      outgoing_.send("workspace/inlayHint/refresh", nullptr, [](const json*, const rpc::Error*) {});
    }
  }
}

void LanguageServer::pull_configuration() {
  outgoing_.send(
      "workspace/configuration", {{"items", json::array({{{"section", "maxkernel"}}})}},
      [this](const json* result, const rpc::Error* error) {
        if (error) {
          spdlog::warn("workspace/configuration failed: {}", error->message);
          return;
        }
        if (result && result->is_array() && !result->empty()) apply_configuration((*result)[0]);
      },
      options_.client_request_timeout);
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

  dispatcher_.on_request("initialize",
                         [this](const ParamReader& p, Reply r) { on_initialize(p, r); });
  dispatcher_.on_notification("initialized", [](const ParamReader&) {});
  // The editor's secret store hands the LLM key over here; it lives in memory only.
  dispatcher_.on_notification("maxkernel/setApiKey",
                              [this](const ParamReader& p) { take_api_key(p.value()); });
  dispatcher_.on_request("shutdown", [this](const ParamReader&, Reply r) {
    shutdown_requested_ = true;
    optimizations_.cancel_all();  // no new work after shutdown; exit waits for the workers
    r.result(nullptr);
  });
  dispatcher_.on_notification("exit", [this](const ParamReader&) { exit_requested_ = true; });

  dispatcher_.on_notification("textDocument/didOpen",
                              [this](const ParamReader& p) { on_did_open(p); });
  dispatcher_.on_notification("textDocument/didChange",
                              [this](const ParamReader& p) { on_did_change(p); });
  dispatcher_.on_notification("textDocument/didSave", [this](const ParamReader& p) {
    const std::string uri = p.object("textDocument").string("uri");
    if (OpenDocument* doc = documents_.find(uri)) {
      if (doc->python) doc->analyse(target());
      runs_.on_save(*doc);
    }
    wrapper_file_changed(uri);
  });
  dispatcher_.on_notification("window/workDoneProgress/cancel", [this](const ParamReader& p) {
    const std::string token = p.raw("token").dump();
    if (const service::Job* job = workspace_.jobs().cancel_by_progress_token(token))
      spdlog::info("{} job {} cancelled by its progress token {}", job->group, job->id, token);
  });
  dispatcher_.on_notification("textDocument/didClose", [this](const ParamReader& p) {
    const std::string uri = p.object("textDocument").string("uri");
    documents_.close(uri);
    notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
    wrapper_file_changed(uri);  // the disk's text is the module's again
  });
  // Sent by clients that watch the workspace's files for us (e.g. a wrapper module saved by
  // another tool); each changed file's wrappers are described again.
  dispatcher_.on_notification("workspace/didChangeWatchedFiles", [this](const ParamReader& p) {
    const json& changes = p.raw("changes");
    if (!changes.is_array()) p.fail("changes", "expected an array");
    for (const json& change : changes) {
      if (change.is_object() && change.contains("uri") && change["uri"].is_string())
        wrapper_file_changed(change["uri"].get<std::string>());
    }
  });
  dispatcher_.on_notification("workspace/didChangeConfiguration", [this](const ParamReader& p) {
    if (client_.configuration) {
      pull_configuration();
    } else if (const json* s = p.optional_raw("settings")) {
      apply_configuration(*s);
    }
  });

  dispatcher_.on_request("textDocument/hover",
                         [this](const ParamReader& p, Reply r) { on_hover(p, r); });
  dispatcher_.on_request("textDocument/codeLens",
                         [this](const ParamReader& p, Reply r) { on_code_lens(p, r); });
  dispatcher_.on_request("textDocument/codeAction",
                         [this](const ParamReader& p, Reply r) { on_code_action(p, r); });
  dispatcher_.on_request("textDocument/inlayHint",
                         [this](const ParamReader& p, Reply r) { on_inlay_hint(p, r); });
  dispatcher_.on_request("textDocument/documentSymbol",
                         [this](const ParamReader& p, Reply r) { on_document_symbol(p, r); });
  dispatcher_.on_request("maxkernel/sessions",
                         [this](const ParamReader&, Reply r) { r.result(hitl_.sessions()); });
  dispatcher_.on_request("maxkernel/status",
                         [this](const ParamReader& p, Reply r) { on_status(p, r); });
  dispatcher_.on_request("workspace/executeCommand",
                         [this](const ParamReader& p, Reply r) { on_execute_command(p, r); });
}

HostSettings LanguageServer::host_settings() const {
  HostSettings h;
  h.default_host = settings_.host;
  h.local_python = settings_.python;
  h.hosts = settings_.hosts;
  h.lower_on_save = settings_.lower_on_save;
  h.target = settings_.target;
  return h;
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

void LanguageServer::take_api_key(const json& secret) {
  if (!secret.is_object() || !secret.contains("apiKey")) return;
  if (secret["apiKey"].is_string() && !secret["apiKey"].get<std::string>().empty())
    llm_api_key_ = secret["apiKey"].get<std::string>();
  else
    llm_api_key_.reset();
  spdlog::info("LLM API key {}", llm_api_key_ ? "received (kept in memory)" : "cleared");
}

void LanguageServer::on_initialize(const ParamReader& params, Reply reply) {
  if (const json* caps = params.optional_raw("capabilities"))
    client_ = resolve_client_capabilities(*caps);
  if (const json* options = params.optional_raw("initializationOptions")) {
    std::vector<std::string> problems;
    apply_settings(*options, settings_, problems);
    // Shown in the editor too (window/showMessage may precede the initialize reply): a misspelled
    // setting must not be ignored without a word.
    for (const auto& p : problems) {
      spdlog::warn("initializationOptions: {}", p);
      notify("window/showMessage", {{"type", 2}, {"message", "MaxKernel: " + p}});
    }
    take_api_key(options->value("secrets", json::object()).value("llm", json::object()));
  }
  progress_.set_client_support(client_.work_done_progress);
  optimizations_.set_client(client_);
  writing_.set_client(client_);
  runs_.configure(host_settings());
  documents_.set_workspace_roots(workspace_roots(params));
  initialized_ = true;
  reply.result({{"capabilities", server_capabilities()},
                {"serverInfo", {{"name", "maxkernel-lsp"}, {"version", "0.1.0"}}}});
  // The target's facts come from a bundled table read on first use: read it while the client
  // takes in the answer, not inside the first open file's diagnostics.
  spdlog::info("target generation: {}", target().name);
}

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

void LanguageServer::on_execute_command(const ParamReader& params, Reply reply) {
  const std::string command = params.string("command");
  if (command == "maxkernel.test" || command == "maxkernel.profile") {
    const json& args = params.raw("arguments");
    if (!args.is_array() || args.empty() || !args[0].is_object())
      params.fail("arguments", "expected [{uri, kernel}]");
    const ParamReader arg(args[0], "params.arguments[0]");
    OpenDocument* doc = documents_.find(arg.string("uri"));
    if (!doc) arg.fail("uri", "document is not open");
    doc->analyse(target());
    const int64_t index = arg.integer("kernel");
    if (index < 0) arg.fail("kernel", "must be a kernel index");
    return reply.result(runs_.start(command == "maxkernel.test" ? "test" : "profile", *doc,
                                    static_cast<size_t>(index),
                                    params.optional_raw("workDoneToken"), target()));
  }
  if (command == "maxkernel.optimizeStepByStep") {
    const json& args = params.raw("arguments");
    if (!args.is_array() || args.empty())
      params.fail("arguments", "expected [{uri, kernel}] or [{session, uri}]");
    return reply.result(hitl_.start(args[0]));
  }
  if (OptimizationRuns::handles(command))
    return optimizations_.execute(
        command, params, reply,
        {host_settings(), settings_.budget, settings_.target, llm_spec_of(settings_.llm),
         llm_api_key_, settings_.autotune_configs});
  if (command == KernelWriting::kCommand) return writing_.execute(params, reply, settings_.target);
  throw rpc::RpcError(ec::kInvalidParams, "params.command: unknown command '" + command + "'");
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
