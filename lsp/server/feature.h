// What the server's features (Test/Profile runs, Auto / graph runs, step-by-step sessions, the
// kernel writer) add to the answers every document request gives: the server asks each in turn
// and appends, instead of merging each feature's results by hand. A feature overrides only what
// it shows; the defaults add nothing (and allocate nothing: hover and codeLens are hot paths).
// Main-loop only.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "knowledge/tpu_generations.h"
#include "lsp/server/document_store.h"

namespace mk::server {

class Feature {
 public:
  virtual ~Feature() = default;

  virtual void add_diagnostics(OpenDocument&, const analysis::DocumentAnalysis&,
                               nlohmann::json& /*out*/) const {}
  virtual void add_code_lenses(OpenDocument&, const analysis::DocumentAnalysis&,
                               nlohmann::json& /*out*/) const {}
  virtual void add_inlay_hints(OpenDocument&, const analysis::DocumentAnalysis&,
                               nlohmann::json& /*out*/) const {}
  // `context_diagnostics`: the codeAction request's context.diagnostics; the document may be
  // other than Python (then it has no analysis).
  virtual void add_code_actions(OpenDocument&, const nlohmann::json& /*context_diagnostics*/,
                                nlohmann::json& /*out*/) const {}
  // Markdown after the kernel's own hover text.
  virtual void add_hover(OpenDocument&, const pallas::Kernel&, const knowledge::TpuGeneration&,
                         std::string& /*markdown*/) const {}

  // Its background jobs now, under this name in maxkernel/status's runningJobs.
  virtual const char* status_name() const = 0;
  virtual size_t running() const = 0;
};

// Moves each item of `items` (a JSON array) to the end of `out`.
inline void append_all(nlohmann::json& out, nlohmann::json items) {
  for (nlohmann::json& item : items) out.push_back(std::move(item));
}

}  // namespace mk::server
