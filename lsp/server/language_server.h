// The language server: owns the LSP lifecycle, documents and configuration, and answers requests
// from the engine. One main loop owns all mutable state; the reader thread only parses frames and
// handles $/cancelRequest; replies go through one serialised writer.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "knowledge/tpu_generations.h"
#include "lsp/protocol/dispatcher.h"
#include "lsp/protocol/framing.h"
#include "lsp/protocol/message_queue.h"
#include "lsp/protocol/outgoing_requests.h"
#include "lsp/server/capabilities.h"
#include "lsp/server/document_store.h"
#include "lsp/server/hitl_runs.h"
#include "lsp/server/kernel_runs.h"
#include "lsp/server/kernel_writing.h"
#include "lsp/server/optimization_runs.h"
#include "lsp/server/progress.h"
#include "lsp/server/server_port.h"
#include "lsp/server/settings.h"
#include "lsp/server/tree_worker.h"
#include "service/workspace.h"

namespace mk::server {

struct ServerOptions {
  size_t max_message_bytes = 64u << 20;
  bool enable_test_methods = false;  // maxkernel/test/* methods for the transcript tests
  std::chrono::milliseconds client_request_timeout{30000};
};

class LanguageServer final : private ServerPort {
 public:
  LanguageServer(ServerOptions options, std::function<void(std::string_view)> sink);
  ~LanguageServer();

  // Reads frames from `input` until `exit` or end of input; returns the process exit code
  // (0 after shutdown, 1 otherwise).
  int run(rpc::ByteSource& input);

 private:
  void register_handlers();
  void reader_loop(rpc::ByteSource& input);
  void handle_message(nlohmann::json& message);
  void send(const nlohmann::json& message);
  // ServerPort: what the features ask of the server.
  void post(std::function<void()> task) override;
  OpenDocument* find_document(const std::string& uri) override;
  void notify(const std::string& method, nlohmann::json params) override;
  void request(const std::string& method, nlohmann::json params, ResponseHandler handler) override;
  void republish(const std::string& uri) override;
  void refresh_after_run(const std::string& uri) override;
  const knowledge::TpuGeneration& target() const override;
  HostSettings host_settings() const override;
  LlmChoice llm() const override;
  bool cancel_kernel_job(const std::string& job) override;
  std::shared_ptr<tpu::HostPool> borrow_hosts(std::string& error) override;

  void flush_dirty_documents();
  void publish_diagnostics(OpenDocument& doc);
  nlohmann::json diagnostics_of(OpenDocument& doc);
  // The full parse of a document first parsed in part; adopted when the document has not been
  // reopened or replaced meanwhile, and its diagnostics published again if they changed.
  void start_full_parse(OpenDocument& doc);
  void adopt_full_tree(const std::string& uri, uint64_t generation, syntax::TreePtr full);
  size_t partly_parsed();  // open documents whose tree does not cover all of their text yet
  // True when an edit to `uri` is already queued, so a result computed now would be stale.
  bool edit_pending(const std::string& uri) const;
  OpenDocument& document_for(const rpc::ParamReader& params);
  void apply_configuration(const nlohmann::json& value);
  void pull_configuration();

  // Lifecycle and settings (lifecycle_requests.cpp).
  void on_initialize(const rpc::ParamReader& params, rpc::Reply reply);
  void on_initialized(const rpc::ParamReader& params);
  void on_shutdown(const rpc::ParamReader& params, rpc::Reply reply);
  void on_exit(const rpc::ParamReader& params);
  void on_set_api_key(const rpc::ParamReader& params);
  void take_api_key(const nlohmann::json& secret);  // {provider, apiKey|null}
  void on_did_change_configuration(const rpc::ParamReader& params);
  // Document synchronisation (document_sync.cpp).
  void on_did_open(const rpc::ParamReader& params);
  void on_did_change(const rpc::ParamReader& params);
  void on_did_save(const rpc::ParamReader& params);
  void on_did_close(const rpc::ParamReader& params);
  void on_did_change_watched_files(const rpc::ParamReader& params);
  // A wrapper module may have changed: the documents that import it are analysed again.
  void wrapper_file_changed(const std::string& uri);
  // The document requests (document_requests.cpp): each asks the features in features_.
  void on_hover(const rpc::ParamReader& params, rpc::Reply reply);
  void on_code_lens(const rpc::ParamReader& params, rpc::Reply reply);
  void on_code_action(const rpc::ParamReader& params, rpc::Reply reply);
  void on_inlay_hint(const rpc::ParamReader& params, rpc::Reply reply);
  void on_document_symbol(const rpc::ParamReader& params, rpc::Reply reply);
  void on_status(const rpc::ParamReader& params, rpc::Reply reply);
  // workspace/executeCommand and its jobs (command_requests.cpp): one function per command.
  void on_execute_command(const rpc::ParamReader& params, rpc::Reply reply);
  void start_kernel_run(const std::string& command, const rpc::ParamReader& params,
                        rpc::Reply reply);
  void start_step_by_step(const std::string& command, const rpc::ParamReader& params,
                          rpc::Reply reply);
  void start_kernel_writing(const std::string& command, const rpc::ParamReader& params,
                            rpc::Reply reply);
  void run_optimization_command(const std::string& command, const rpc::ParamReader& params,
                                rpc::Reply reply);
  void on_sessions(const rpc::ParamReader& params, rpc::Reply reply);
  void on_work_done_progress_cancel(const rpc::ParamReader& params);
  void register_test_methods();

  ServerOptions options_;
  rpc::FrameWriter writer_;
  rpc::MessageQueue queue_;
  rpc::Dispatcher dispatcher_;
  rpc::OutgoingRequests outgoing_;
  DocumentStore documents_;
  TreeWorker trees_;  // after the queue and the documents, which its results reach
  ClientCapabilities client_;
  Settings settings_;
  std::optional<std::string> llm_api_key_;  // from the editor's secret store; never logged
  bool initialized_ = false;
  bool shutdown_requested_ = false;
  bool exit_requested_ = false;
  std::vector<std::string> dirty_;  // documents whose diagnostics must be re-published
  // The store, warm hosts and job table every feature below shares; outlives them all.
  service::Workspace workspace_;
  ProgressTracker progress_;
  OptimizationRuns optimizations_;  // Auto / graph search runs
  HitlRuns hitl_;                   // "Optimize step by step" sessions
  KernelWriting writing_;           // "Write a Pallas kernel for this"
  KernelRuns runs_;  // its destructor waits for background jobs that use the members above
  // What each document request asks, in this order (diagnostics, hints, hover and code actions
  // list the runs' first, then the searches', the sessions', the kernel writer's).
  const std::array<Feature*, 4> features_{&runs_, &optimizations_, &hitl_, &writing_};
};

}  // namespace mk::server
