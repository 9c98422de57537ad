// "Write a Pallas kernel for this": the code action on a plain JAX reference (a file defining
// reference + make_inputs, or a task's reference.py / baseline.py) that has no pallas_call yet.
// The kernel is written off the main loop by the service layer (the worker's templates) and
// arrives as a reviewable workspace edit: inserted beside the reference with its imports, or as
// a new file beside a task's reference, never replacing what the user wrote.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "lsp/protocol/dispatcher.h"
#include "lsp/server/background.h"
#include "lsp/server/capabilities.h"
#include "lsp/server/document_store.h"
#include "lsp/server/feature.h"
#include "lsp/server/progress.h"
#include "lsp/server/server_port.h"
#include "service/workspace.h"

namespace mk::server {

class KernelWriting : public Feature {
 public:
  static constexpr const char* kCommand = "maxkernel.writeKernel";

  KernelWriting(ServerPort& server, ProgressTracker& progress);
  ~KernelWriting();

  void set_client(const ClientCapabilities& client) { client_ = client; }
  // The action on a reference with no kernel (none elsewhere).
  nlohmann::json code_actions(OpenDocument& doc) const;
  // Starts writing; answers {"status": "started", "job", "progressToken"} at once.
  void execute(const rpc::ParamReader& params, rpc::Reply reply, const std::string& target);
  size_t running() const override { return running_->load(); }
  const char* status_name() const override { return "kernelWriting"; }
  // Feature: "Write a Pallas kernel for this" on a Python document's reference functions.
  void add_code_actions(OpenDocument& doc, const nlohmann::json&,
                        nlohmann::json& out) const override {
    if (doc.python) append_all(out, code_actions(doc));
  }

 private:
  struct Written;
  void finish(const std::string& token, const Written& written);

  ServerPort& server_;
  ProgressTracker& progress_;
  ClientCapabilities client_;
  int next_job_ = 1;
  std::shared_ptr<std::atomic<int>> running_ = std::make_shared<std::atomic<int>>(0);
  BackgroundPool pool_{1};  // last: destroyed first, so no job outlives the server
};

}  // namespace mk::server
