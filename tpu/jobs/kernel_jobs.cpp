#include "tpu/jobs/kernel_jobs.h"

#include <fstream>
#include <sstream>

#include "tpu/host/content_hash.h"

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

JobResult KernelJobs::lower(const KernelRequest& request, const std::function<bool()>& cancelled) {
  return {host_.run(Lane::Compile, base_request("lower", request), cancelled), false, ""};
}

JobResult KernelJobs::test(const KernelRequest& request, bool use_cache,
                           const std::function<bool()>& cancelled,
                           const KernelJobs::Progress& on_progress) {
  JobResult result;
  if (store_) {
    const std::string fingerprint = host_.fingerprint();
    if (fingerprint != "unreachable") result.cache_key = evaluation_cache_key(request, fingerprint);
  }
  if (use_cache && store_ && !result.cache_key.empty()) {
    if (auto hit = store_->cached_evaluation(result.cache_key)) {
      result.reply.status = WorkerReply::Status::Ok;
      result.reply.body = json::parse(*hit);
      result.from_cache = true;
      return result;
    }
  }
  result.reply = host_.run(Lane::Timing, base_request("evaluate", request), cancelled, std::nullopt,
                           on_progress);
  // Only verdicts are cached (correct or not); infrastructure failures are not.
  if (store_ && !result.cache_key.empty() && result.reply.ok()) {
    store_->store_evaluation(result.cache_key, host_.fingerprint(), result.reply.body.dump());
  }
  return result;
}

JobResult KernelJobs::profile(const KernelRequest& request, const std::function<bool()>& cancelled,
                              const KernelJobs::Progress& on_progress) {
  return {host_.run(Lane::Timing, base_request("profile", request), cancelled, std::nullopt,
                    on_progress),
          false, ""};
}

}  // namespace mk::tpu
