// KernelJobs::autotune and its cache: each configuration's verdict is kept per (kernel, task,
// options, host), so a second run, or a later session, sends the worker only what is new.
#include <stdexcept>

#include "tpu/host/content_hash.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::tpu {

using nlohmann::json;

namespace {

// Verdicts are cached; a configuration that failed for another reason (a task error, a worker
// fault) may pass next time and is asked again.
bool is_verdict(const json& result) {
  const std::string status = result.value("status", "");
  return status == "ok" || status == "incorrect" || status == "skipped";
}

std::string tuning_cache_key(const std::string& evaluation_key, const json& config) {
  return sha256_hex(evaluation_key + "\ntuning config " + config.dump());
}

}  // namespace

std::vector<json> space_configs(const json& space) {
  if (!space.is_object() || space.empty())
    throw std::invalid_argument("a tuning space is an object {NAME: [values...]}");
  std::vector<json> configs = {json::object()};
  for (const auto& [name, values] : space.items()) {
    if (!values.is_array() || values.empty())
      throw std::invalid_argument("the tuning space's " + name + " needs a non-empty list");
    std::vector<json> wider;
    for (const json& config : configs)
      for (const json& value : values) {
        json c = config;
        c[name] = value;
        wider.push_back(std::move(c));
      }
    configs = std::move(wider);
  }
  return configs;
}

TuningResult KernelJobs::autotune(const KernelRequest& request, const json& space,
                                  const std::function<bool()>& cancelled,
                                  const KernelJobs::Progress& on_progress) {
  TuningResult out;
  const std::vector<json> configs = space_configs(space);
  std::string fingerprint;
  const std::string evaluation_key = cache_key(request, fingerprint);
  std::vector<json> results(configs.size());
  json missing = json::array();
  std::vector<size_t> missing_at;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (!evaluation_key.empty())
      if (auto hit = store_->cached_tuning(tuning_cache_key(evaluation_key, configs[i]))) {
        results[i] = json::parse(*hit);
        results[i]["cached"] = true;
        ++out.cache_hits;
        continue;
      }
    missing.push_back(configs[i]);
    missing_at.push_back(i);
  }
  out.reply.status = WorkerReply::Status::Ok;
  if (!missing.empty()) {
    json r = base_request("autotune", request);
    r["configs"] = missing;
    out.reply =
        host_.run(Lane::Timing, std::move(r), cancelled, std::nullopt, on_progress, &out.host);
    if (!out.reply.ok()) return out;
    // The worker sorts its results best first; each names its configuration.
    for (const json& fresh : out.reply.body.value("results", json::array())) {
      const json config = fresh.value("config", json());
      for (size_t k = 0; k < missing_at.size(); ++k) {
        const size_t i = missing_at[k];
        if (configs[i] != config || !results[i].is_null()) continue;
        results[i] = fresh;
        results[i]["cached"] = false;
        ++out.evaluated;
        if (!evaluation_key.empty() && is_verdict(fresh))
          store_->store_tuning(tuning_cache_key(evaluation_key, config), fingerprint, config.dump(),
                               fresh.dump());
        break;
      }
    }
  }
  for (json& r : results)
    if (!r.is_null()) out.results.push_back(std::move(r));
  return out;
}

}  // namespace mk::tpu
