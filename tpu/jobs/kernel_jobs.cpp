#include "tpu/jobs/kernel_jobs.h"

#include <fstream>
#include <sstream>

#include "knowledge/time_model.h"
#include "tpu/host/content_hash.h"
#include "tpu/jobs/predictions.h"
#include "tpu/jobs/worker_replies.h"

namespace mk::tpu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::optional<json> locate_task(const fs::path& file, bool defines_infile_task,
                                std::string& reason) {
  std::error_code ec;
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (fs::exists(dir / "kernel_task.yaml", ec))
    return json{{"form", "maxkernel"}, {"path", dir.string()}};
  if (file.filename() != "baseline.py" && fs::exists(dir / "baseline.py", ec)) {
    return json{{"form", "jaxbench"}, {"baseline", (dir / "baseline.py").string()}};
  }
  if (defines_infile_task) return json{{"form", "infile"}, {"path", file.string()}};
  reason = "no task for " + file.filename().string() +
           ": define reference(*inputs) and make_inputs(key) in the file, or put it beside a "
           "baseline.py "
           "(JAXBench) or a kernel_task.yaml (MaxKernel); see docs/tasks.md";
  return std::nullopt;
}

std::optional<json> locate_reference_task(const fs::path& target, bool defines_infile_task,
                                          fs::path& anchor, std::string& reason) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(target, ec);
  const fs::path dir = is_dir ? target : target.parent_path();
  if ((is_dir && fs::exists(dir / "kernel_task.yaml", ec)) ||
      target.filename() == "kernel_task.yaml") {
    anchor = dir / "reference.py";
    return json{{"form", "maxkernel"}, {"yaml", (dir / "kernel_task.yaml").string()}};
  }
  if ((is_dir && fs::exists(dir / "baseline.py", ec)) || target.filename() == "baseline.py") {
    anchor = dir / "baseline.py";
    return json{{"form", "jaxbench"}, {"baseline", anchor.string()}};
  }
  if (!is_dir && defines_infile_task) {
    anchor = target;
    return json{{"form", "infile"}, {"path", target.string()}};
  }
  reason = is_dir ? "no task in " + target.string() +
                        ": a task folder holds kernel_task.yaml (MaxKernel) or baseline.py "
                        "(JAXBench); see docs/tasks.md"
                  : "no pallas_call in " + target.filename().string() +
                        " and no task to write one from: define reference(*inputs) and "
                        "make_inputs(key) in the file, or give a task folder; see docs/tasks.md";
  return std::nullopt;
}

std::string evaluation_cache_key(const KernelRequest& request,
                                 const std::string& host_fingerprint) {
  json task = request.task;
  // The reference decides the verdict too: fold the task files' text into the key.
  for (const char* key : {"baseline", "path"}) {
    if (!task.contains(key) || !task[key].is_string()) continue;
    fs::path p = task[key].get<std::string>();
    std::error_code ec;
    if (fs::is_directory(p, ec)) p /= "kernel_task.yaml";
    if (fs::is_regular_file(p, ec) && p != request.file)
      task[std::string(key) + "_sha256"] = sha256_hex(read_file(p));
  }
  const json material = {{"source", request.normalized_source},
                         {"kernel", request.kernel.value_or("")},
                         {"task", task},
                         {"host", host_fingerprint},
                         {"options", request.options}};
  return sha256_hex(material.dump());
}

json KernelJobs::base_request(const std::string& op, const KernelRequest& request) const {
  json r = request.options;
  r["op"] = op;
  r["source"] = request.source;
  r["filename"] = request.file.string();
  r["task"] = request.task;
  if (request.kernel) r["kernel"] = *request.kernel;
  return r;
}

std::string KernelJobs::cache_key(const KernelRequest& request, std::string& fingerprint) {
  if (!store_) return "";
  fingerprint = host_.fingerprint();
  return fingerprint == "unreachable" ? "" : evaluation_cache_key(request, fingerprint);
}

JobResult KernelJobs::lower(const KernelRequest& request, const std::function<bool()>& cancelled) {
  JobResult result;
  result.reply =
      host_.run(Lane::Compile, base_request("lower", request), cancelled, {}, {}, &result.host);
  return result;
}

JobResult KernelJobs::reference(const KernelRequest& request,
                                const std::function<bool()>& cancelled) {
  JobResult result;
  result.reply =
      host_.run(Lane::Timing, base_request("reference", request), cancelled, {}, {}, &result.host);
  return result;
}

JobResult KernelJobs::generate(const KernelRequest& request,
                               const std::function<bool()>& cancelled) {
  JobResult result;
  json r = base_request("generate", request);
  // The generate op runs on a compile worker, on the CPU: the device is the timing worker's.
  if (!r.contains("kernel_form")) {
    const WorkerReply hello = host_.hello();
    if (hello.ok() && hello.body.value("platform", std::string()) == "gpu")
      r["kernel_form"] = "gpu";
  }
  result.reply = host_.run(Lane::Compile, r, cancelled, {}, {}, &result.host);
  return result;
}

JobResult KernelJobs::test(const KernelRequest& request, bool use_cache,
                           const std::function<bool()>& cancelled,
                           const KernelJobs::Progress& on_progress) {
  JobResult result;
  std::string fingerprint;
  result.cache_key = cache_key(request, fingerprint);
  if (use_cache && store_ && !result.cache_key.empty()) {
    if (auto hit = store_->cached_evaluation(result.cache_key)) {
      result.reply.status = WorkerReply::Status::Ok;
      result.reply.body = json::parse(*hit);
      result.from_cache = true;
      return result;
    }
  }
  result.reply = host_.run(Lane::Timing, base_request("evaluate", request), cancelled, std::nullopt,
                           on_progress, &result.host);
  const EvaluateReply reply = read_evaluate_reply(result.reply.body);
  check_model(result, reply);
  // Only the judge's verdicts are cached (correct or not; a reply with `judge` comes from the
  // worker that ran the candidate in its own process); infrastructure failures are not. --no-cache
  // neither reads nor writes the store.
  if (use_cache && store_ && !result.cache_key.empty() && result.reply.ok() && reply.judged) {
    store_->store_evaluation(result.cache_key, fingerprint, result.reply.body.dump());
  }
  return result;
}

void KernelJobs::check_model(JobResult& result, const EvaluateReply& reply) {
  // Only real device time on a TPU says anything about a TPU model.
  if (!result.reply.ok()) return;
  if (!reply.correct || reply.time_kind != "device") return;
  const WorkerReply hello = host_.hello();
  const json generation = hello.body.value("tpu_generation", json());
  if (!generation.is_string()) return;
  const knowledge::TpuGeneration* target =
      knowledge::find_tpu_generation(generation.get<std::string>());
  const double measured = reply.candidate ? reply.candidate->median_s.value_or(0.0) : 0.0;
  if (!target || measured <= 0) return;
  double predicted = 0;
  for (const json& p : predict_pallas_calls(reply.pallas_calls, *target)) {
    if (!p.contains("predicted_s")) return;  // a kernel without facts: no honest total
    predicted += p["predicted_s"].get<double>();
  }
  json& b = result.reply.body;
  b["model_check"] = {{"label", "predicted (model, " + target->name + ")"},
                      {"predicted_s", predicted},
                      {"measured_s", measured},
                      {"relative_error", knowledge::model_error(predicted, measured)}};
  if (store_) {
    store_->record_model_check(result.cache_key, target->name, predicted, measured);
    const auto accuracy = store_->model_accuracy(target->name);
    b["model_check"]["checks_so_far"] = accuracy.checks;
    b["model_check"]["mean_abs_relative_error"] = accuracy.mean_abs_relative_error;
  }
}

JobResult KernelJobs::profile(const KernelRequest& request, const std::function<bool()>& cancelled,
                              const KernelJobs::Progress& on_progress) {
  JobResult result;
  result.reply = host_.run(Lane::Timing, base_request("profile", request), cancelled, std::nullopt,
                           on_progress, &result.host);
  return result;
}

}  // namespace mk::tpu
