#include "lsp/server/kernel_writing.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "knowledge/tpu_generations.h"
#include "lsp/protocol/json_rpc.h"
#include "lsp/server/lsp_convert.h"
#include "lsp/server/uri.h"
#include "service/generation.h"
#include "source/syntax/module_layout.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::server {

using nlohmann::json;
namespace ec = rpc::error_code;

namespace {

constexpr const char* kWrittenKernelAnnotation = "maxkernel.writtenKernel";
constexpr const char* kTitle = "Write a Pallas kernel for this";

// The reference function of each task form: what the kernel is written from.
std::string reference_function(const std::string& form) {
  if (form == "maxkernel") return "computation";
  if (form == "jaxbench") return "workload";
  return "reference";
}

// The task this document is the reference of, or nullopt when it is none (or has a kernel).
struct ReferenceDocument {
  json task;
  std::filesystem::path path, anchor;
  std::string form, function;
};

std::optional<ReferenceDocument> reference_document(OpenDocument& doc, std::string& reason) {
  if (!doc.python || !doc.analysis) return std::nullopt;
  const pallas::PallasModel& model = doc.analysis->model;
  if (!model.kernels.empty()) {
    reason = "the file already has a pallas_call";
    return std::nullopt;
  }
  const std::string form = model.task.form();
  if (form.empty()) {
    reason = "the file defines no task (reference + make_inputs, or a task's reference)";
    return std::nullopt;
  }
  auto path = path_of_uri(doc.text.uri());
  if (!path) {
    reason = "only file:// documents have a task";
    return std::nullopt;
  }
  ReferenceDocument r;
  r.path = *path;
  r.form = form;
  r.function = reference_function(form);
  auto task = tpu::locate_reference_task(form == "infile" ? *path : path->parent_path(),
                                         form == "infile", r.anchor, reason);
  if (!task) return std::nullopt;
  r.task = *task;
  return r;
}

TextEdit insertion(const text::TextDocument& doc, size_t offset, const std::string& text) {
  return text_edit(doc, offset, offset, text);
}

std::string unique_name(const std::set<std::string>& taken, const std::string& base) {
  if (!taken.count(base)) return base;
  for (int n = 2;; ++n)
    if (!taken.count(base + "_" + std::to_string(n))) return base + "_" + std::to_string(n);
}

}  // namespace

struct KernelWriting::Written {
  std::string uri, function, form;
  int64_t version = 0;
  std::filesystem::path anchor;
  service::GeneratedKernel kernel;
};

KernelWriting::KernelWriting(ServerPort& server, ProgressTracker& progress)
    : server_(server), progress_(progress) {}

KernelWriting::~KernelWriting() = default;

json KernelWriting::code_actions(OpenDocument& doc) const {
  std::string reason;
  auto reference = reference_document(doc, reason);
  if (!reference) return json::array();
  return json::array({{{"title", kTitle},
                       {"kind", "refactor.rewrite"},
                       {"command",
                        {{"title", kTitle},
                         {"command", kCommand},
                         {"arguments", json::array({{{"uri", doc.text.uri()}}})}}}}});
}

void KernelWriting::execute(const rpc::ParamReader& params, rpc::Reply reply,
                            const std::string& target) {
  const json& args = params.raw("arguments");
  if (!args.is_array() || args.empty() || !args[0].is_object())
    params.fail("arguments", "expected [{uri}]");
  const rpc::ParamReader arg(args[0], "params.arguments[0]");
  OpenDocument* doc = server_.find_document(arg.string("uri"));
  if (!doc) arg.fail("uri", "document is not open");
  const knowledge::TpuGeneration* generation = knowledge::find_tpu_generation(target);
  if (!generation) throw rpc::RpcError(ec::kRequestFailed, "unknown TPU generation " + target);
  doc->analyse(*generation);
  std::string reason;
  auto reference = reference_document(*doc, reason);
  if (!reference) throw rpc::RpcError(ec::kRequestFailed, "no kernel to write: " + reason);
  // Refused before the worker runs, not after: the kernel arrives as versioned document changes.
  if (!client_.apply_edit || !client_.document_changes)
    throw rpc::RpcError(ec::kRequestFailed,
                        client_.apply_edit
                            ? "the editor cannot apply versioned edits (documentChanges)"
                            : "the editor cannot apply workspace edits");

  Written pending;
  pending.uri = doc->text.uri();
  pending.version = doc->text.version();
  pending.function = reference->function;
  pending.form = reference->form;
  pending.anchor = reference->anchor;
  std::optional<std::string> entry;
  if (reference->form == "infile") {
    // Beside the reference in the same file: a name the file does not use yet.
    const auto taken = syntax::top_level_names(doc->tree, doc->text.text());
    entry = unique_name(taken, taken.count("candidate") ? reference->function + "_pallas"
                                                        : std::string("candidate"));
  }
  const std::string job = "write-" + std::to_string(next_job_++);
  const std::string token =
      progress_.begin("MaxKernel: writing a Pallas kernel for " + reference->function,
                      params.optional_raw("workDoneToken"));
  progress_.report(token, "tracing the reference and matching a template");
  ++*running_;
  // The warm hosts of the Test/Profile lenses, borrowed on the main loop; the job keeps them
  // alive (a settings change meanwhile retires them only when it ends).
  std::string host_error;
  std::shared_ptr<tpu::HostPool> hosts = server_.borrow_hosts(host_error);
  pool_.submit([this, hosts, host_error, pending, entry, task = reference->task, generation, token,
                running = running_]() mutable {
    if (!hosts) {
      pending.kernel.error_kind = "host";
      pending.kernel.error = "no host: " + host_error;
    } else {
      tpu::KernelJobs jobs(*hosts, nullptr);
      pending.kernel = service::generate_kernel(jobs, pending.anchor, task, *generation, entry);
    }
    hosts.reset();  // before the main loop hears of it: nothing holds the pool past the job
    server_.post([this, token, pending] { finish(token, pending); });
    --*running;
  });
  reply.result({{"status", "started"}, {"job", job}, {"progressToken", json::parse(token)}});
}

void KernelWriting::finish(const std::string& token, const Written& written) {
  auto warn = [&](const std::string& message) {
    progress_.end(token, message);
    server_.notify("window/showMessage", {{"type", 2}, {"message", "MaxKernel: " + message}});
  };
  const service::GeneratedKernel& k = written.kernel;
  if (!k.ok) return warn("no kernel written for `" + written.function + "`: " + k.error);
  const std::string label =
      "MaxKernel: Pallas kernel for `" + written.function + "` (" + k.kernel_class + " template)";
  DocumentEdits changes;
  std::string where;
  if (written.form == "infile") {
    OpenDocument* doc = server_.find_document(written.uri);
    if (!doc) return warn("the document was closed before the kernel was written");
    if (doc->text.version() != written.version)
      return warn("the document changed while the kernel was written (version " +
                  std::to_string(written.version) + ", now " + std::to_string(doc->text.version()) +
                  "); run the action again");
    const std::string& text = doc->text.text();
    auto span = syntax::top_level_function(doc->tree, text, written.function);
    if (!span) return warn("`" + written.function + "` is no longer a top-level function");
    changes.uri = written.uri;
    changes.version = written.version;
    std::string imports;
    for (const std::string& line : k.imports)
      if (text.find(line) == std::string::npos) imports += line + "\n";
    if (!imports.empty()) {
      const uint32_t at = syntax::end_of_imports(doc->tree, text);
      changes.edits.push_back(
          at == 0 ? insertion(doc->text, 0, imports)
                  : insertion(doc->text, at, "\n" + imports.substr(0, imports.size() - 1)));
    }
    std::string body = k.body;
    while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
    while (!body.empty() && body.front() == '\n') body.erase(body.begin());
    changes.edits.push_back(insertion(doc->text, span->end, "\n\n\n" + body + "\n"));
    where = "after `" + written.function + "`";
  } else {
    // A task's reference stays as it is: the kernel goes in a new file beside it.
    const std::filesystem::path dir = written.anchor.parent_path();
    std::filesystem::path file = dir / (written.anchor.stem().string() + "_pallas.py");
    for (int n = 2; std::filesystem::exists(file); ++n)
      file = dir / (written.anchor.stem().string() + "_pallas_" + std::to_string(n) + ".py");
    changes.uri = file_uri(file);
    changes.create = true;
    changes.edits.push_back({{0, 0}, {0, 0}, k.source});
    where = "in " + file.filename().string();
  }
  const EditAnnotation annotation{kWrittenKernelAnnotation, label, k.description};
  const json workspace_edit = to_workspace_edit({changes}, /*document_changes=*/true,
                                                client_.change_annotations ? &annotation : nullptr);
  progress_.end(token, k.kernel_class + " kernel written; review the edit " + where);
  server_.request("workspace/applyEdit", {{"label", label}, {"edit", workspace_edit}},
                  [label](const json* result, const rpc::Error* error) {
                    const bool applied =
                        !error && result && result->is_object() && result->value("applied", false);
                    spdlog::info("{}: {}", label, applied ? "applied" : "not applied");
                  });
}

}  // namespace mk::server
