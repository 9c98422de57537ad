#include "service/generation.h"

#include "agents/orchestration/candidate_evaluator.h"

namespace mk::service {

using nlohmann::json;

namespace {

std::vector<std::string> strings_of(const json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const json& v : list)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

GeneratedKernel generate_kernel(tpu::KernelJobs& jobs, const std::filesystem::path& anchor,
                                const json& task, const knowledge::TpuGeneration& target,
                                const std::optional<std::string>& entry,
                                const std::function<bool()>& cancelled) {
  tpu::KernelRequest request;
  request.file = anchor;
  request.task = task;
  json target_facts = {{"name", target.name}};
  // The generator plans against the core's whole VMEM and sets each kernel's vmem_limit_bytes
  // from its plan, so the default scoped limit (16 MiB on v5e) is not its budget.
  if (target.vmem_bytes) target_facts["vmem_limit_bytes"] = *target.vmem_bytes;
  request.options["target"] = target_facts;
  if (entry) request.options["entry"] = *entry;
  const tpu::JobResult r = jobs.generate(request, cancelled);
  GeneratedKernel out;
  out.host = r.host;
  const json& body = r.reply.body;
  if (!r.reply.ok()) {
    if (r.reply.status == tpu::WorkerReply::Status::Failed) {
      const json error = body.value("error", json::object());
      out.error_kind = error.value("kind", "error");
      out.error = out.error_kind == "no_template"
                      ? error.value("message", std::string("no template covers this reference"))
                      : agents::describe_worker_error(error);
      out.primitives = strings_of(error.value("primitives", json::array()));
    } else {
      out.error_kind = "host";
      out.error = std::string(tpu::to_string(r.reply.status)) + ": " + r.reply.message;
    }
    return out;
  }
  out.ok = true;
  out.kernel_class = body.value("class", "");
  out.description = body.value("description", "");
  out.source = body.value("source", "");
  out.body = body.value("body", out.source);
  out.entry = body.value("entry", "");
  out.imports = strings_of(body.value("imports", json::array()));
  out.notes = strings_of(body.value("notes", json::array()));
  out.primitives = strings_of(body.value("primitives", json::array()));
  out.tunables = body.value("tunables", json::object());
  if (out.source.empty()) {
    out.ok = false;
    out.error_kind = "internal";
    out.error = "the worker's generate answer has no source";
  }
  return out;
}

agents::Proposal as_proposal(const GeneratedKernel& kernel) {
  agents::Proposal p;
  p.code = kernel.source;
  p.strategy = "generated:" + kernel.kernel_class;
  p.description = kernel.description.empty()
                      ? "kernel written from the reference (" + kernel.kernel_class + " template)"
                      : kernel.description;
  p.plan = "Written from the reference by the " + kernel.kernel_class + " template.";
  for (const std::string& note : kernel.notes) p.plan += "\n- " + note;
  return p;
}

}  // namespace mk::service
