// What the server's features (Test/Profile runs, Auto / graph runs, step-by-step sessions, the
// kernel writer) ask of the server: the main loop, the open documents, the client and the
// settings as they are now. One interface the language server implements, passed by reference
// to each feature, instead of a set of callbacks per feature. Main-loop only, except `post`.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "knowledge/tpu_generations.h"
#include "lsp/protocol/json_rpc.h"
#include "lsp/server/document_store.h"
#include "lsp/server/host_settings.h"

namespace mk::tpu {
class HostPool;
}

namespace mk::server {

// Which LLM plans and implements ("none": the rule-based proposer).
struct LlmChoice {
  std::string spec = "none";
  std::optional<std::string> api_key;  // memory only; never stored or logged
};

class ServerPort {
 public:
  using ResponseHandler = std::function<void(const nlohmann::json*, const rpc::Error*)>;

  // Runs `task` on the main loop; callable from any thread.
  virtual void post(std::function<void()> task) = 0;
  virtual OpenDocument* find_document(const std::string& uri) = 0;
  virtual void notify(const std::string& method, nlohmann::json params) = 0;
  // A request to the client; `handler` gets its answer (or an error, on timeout).
  virtual void request(const std::string& method, nlohmann::json params,
                       ResponseHandler handler) = 0;
  // Re-publishes the document's diagnostics.
  virtual void republish(const std::string& uri) = 0;
  // Re-publishes the diagnostics and asks the client to refresh lenses and inlay hints.
  virtual void refresh_after_run(const std::string& uri) = 0;
  virtual const knowledge::TpuGeneration& target() const = 0;
  virtual HostSettings host_settings() const = 0;
  // The maxkernel.llm spec and the key from the secret store, as they are now.
  virtual LlmChoice llm() const = 0;
  // Cancels a Test/Profile job; false when there is no such job.
  virtual bool cancel_kernel_job(const std::string& job) = 0;
  // The server's warm hosts (KernelRuns::shared_host), shared with other background jobs.
  virtual std::shared_ptr<tpu::HostPool> borrow_hosts(std::string& error) = 0;

 protected:
  ~ServerPort() = default;
};

}  // namespace mk::server
