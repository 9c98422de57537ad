#include "agents/orchestration/diagnosis.h"

#include <algorithm>

#include "agents/orchestration/number_text.h"
#include "knowledge/time_model.h"
#include "tpu/host/json_fields.h"

namespace mk::agents {

using nlohmann::json;
using tpu::number_at;

namespace {

void put(json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}

std::string axes_text(const std::vector<int>& axes) {
  std::string out;
  for (int a : axes) out += (out.empty() ? "" : ",") + std::to_string(a);
  return out;
}

// The task's minimum work: the worker's count of the reference (lower/evaluate "work.reference")
// or, on a reference root, its XLA cost. Only MXU-shaped FLOPs count at the MXU peak.
struct TaskWork {
  std::optional<double> flops, matmul_flops, min_bytes;
};

TaskWork task_work(const json& metrics) {
  TaskWork w;
  const json& ref = metrics.contains("task_work") && metrics["task_work"].is_object()
                        ? metrics["task_work"]
                        : metrics.value("xla_cost", json::object());
  w.flops = number_at(ref, "flops");
  w.matmul_flops = number_at(ref, "matmul_flops");
  w.min_bytes = number_at(ref, "min_bytes");
  return w;
}

std::vector<Refetch> refetches_of(const json& call) {
  std::vector<Refetch> out;
  const json traffic = call.value("traffic", json::object());
  const json grid = call.value("grid", json::array());
  for (const json& op : traffic.value("operands", json::array())) {
    if (op.value("role", std::string()) != "input") continue;
    const auto fetches = number_at(op, "fetches");
    const auto distinct = number_at(op, "distinct_blocks");
    if (!fetches || !distinct || *distinct <= 0 || *fetches <= *distinct) continue;
    Refetch r;
    r.kernel = call.value("kernel", std::string("?"));
    const std::string origin = op.value("origin", json()).is_string() ? op["origin"] : "";
    r.operand = origin.empty() ? "input " + std::to_string(op.value("index", 0)) : origin;
    r.ratio = *fetches / *distinct;
    r.extra_bytes = (*fetches - *distinct) * number_at(op, "block_bytes").value_or(0);
    const json read = op.value("grid_axes_read", json::array());
    for (size_t axis = 0; axis < grid.size(); ++axis) {
      const bool varies = grid[axis].is_number() && grid[axis].get<double>() > 1;
      const bool reads = std::find(read.begin(), read.end(), json(axis)) != read.end();
      if (varies && !reads) r.along_axes.push_back(static_cast<int>(axis));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string summary_of(const Diagnosis& d) {
  if (d.bound == "unknown")
    return "unknown: the lowering facts or the model's predictions are missing";
  std::string s = d.bound + "-bound";
  if (d.bound == "VMEM" && d.vmem_bytes && d.vmem_limit_bytes)
    s = "over the VMEM budget: " + std::to_string(static_cast<int64_t>(*d.vmem_bytes)) +
        " bytes per step of " + std::to_string(static_cast<int64_t>(*d.vmem_limit_bytes));
  if (!d.refetches.empty() && d.bound != "VMEM") {
    const Refetch& r = d.refetches.front();
    s += ": " + r.operand + " re-fetched " + times_text(r.ratio);
    if (!r.along_axes.empty()) s += " along grid axis " + axes_text(r.along_axes);
  } else if (d.hbm_bytes && d.min_bytes && *d.min_bytes > 0 && d.bound == "HBM") {
    s += ": " + times_text(*d.hbm_bytes / *d.min_bytes) + " the task's minimum bytes";
  }
  if (d.roofline_fraction) s += " (" + percent_text(*d.roofline_fraction) + " of the roofline)";
  return s;
}

}  // namespace

json Diagnosis::to_json() const {
  json j = {{"bound", bound}, {"summary", summary}};
  put(j, "compute_s", compute_s);
  put(j, "memory_s", memory_s);
  put(j, "overhead_s", overhead_s);
  put(j, "hbm_bytes", hbm_bytes);
  put(j, "min_bytes", min_bytes);
  put(j, "flops", flops);
  put(j, "vmem_bytes", vmem_bytes);
  put(j, "vmem_limit_bytes", vmem_limit_bytes);
  put(j, "roofline_s", roofline_s);
  put(j, "roofline_fraction", roofline_fraction);
  put(j, "pallas_share", pallas_share);
  json r = json::array();
  for (const Refetch& f : refetches)
    r.push_back({{"operand", f.operand},
                 {"kernel", f.kernel},
                 {"ratio", f.ratio},
                 {"along_axes", f.along_axes},
                 {"extra_bytes", f.extra_bytes}});
  j["refetched"] = r;
  return j;
}

Diagnosis Diagnosis::from_json(const json& j) {
  Diagnosis d;
  if (!j.is_object()) return d;
  d.bound = j.value("bound", d.bound);
  d.summary = j.value("summary", std::string());
  d.compute_s = number_at(j, "compute_s");
  d.memory_s = number_at(j, "memory_s");
  d.overhead_s = number_at(j, "overhead_s");
  d.hbm_bytes = number_at(j, "hbm_bytes");
  d.min_bytes = number_at(j, "min_bytes");
  d.flops = number_at(j, "flops");
  d.vmem_bytes = number_at(j, "vmem_bytes");
  d.vmem_limit_bytes = number_at(j, "vmem_limit_bytes");
  d.roofline_s = number_at(j, "roofline_s");
  d.roofline_fraction = number_at(j, "roofline_fraction");
  d.pallas_share = number_at(j, "pallas_share");
  for (const json& f : j.value("refetched", json::array())) {
    Refetch r;
    r.operand = f.value("operand", std::string());
    r.kernel = f.value("kernel", std::string());
    r.ratio = f.value("ratio", 0.0);
    r.along_axes = f.value("along_axes", std::vector<int>());
    r.extra_bytes = f.value("extra_bytes", 0.0);
    d.refetches.push_back(std::move(r));
  }
  return d;
}

Diagnosis diagnose(const json& metrics, std::optional<double> score_s,
                   const knowledge::TpuGeneration& target) {
  Diagnosis d;
  const TaskWork work = task_work(metrics);
  d.min_bytes = work.min_bytes;
  d.flops = work.flops;

  // The task's minimum work at the roofline (no grid-step overhead: the least any program pays).
  if (work.min_bytes) {
    knowledge::KernelCostFacts facts;
    facts.flops = work.matmul_flops.value_or(work.flops.value_or(0));
    facts.hbm_bytes = *work.min_bytes;
    facts.grid_steps = 0;
    if (auto p = knowledge::predict_time(facts, target)) {
      d.roofline_s = std::max(p->compute_seconds, p->memory_seconds);
      if (score_s && *score_s > 0 && *d.roofline_s > 0)
        d.roofline_fraction = *d.roofline_s / *score_s;
    }
  }

  const json calls = metrics.value("pallas_calls", json::array());
  const json predictions = metrics.value("predictions", json::array());
  const json profile = metrics.value("profile", json::object()).value("summary", json::object());
  if (profile.value("measured", std::string()) == "device")
    d.pallas_share = number_at(profile, "pallas_share");
  if (!calls.is_array() || calls.empty()) {
    // A reference root has no kernel: only its roofline can be said.
    d.summary = summary_of(d);
    return d;
  }

  double hbm = 0;
  bool hbm_known = true;
  for (const json& call : calls) {
    const json traffic = call.value("traffic", json::object());
    if (!traffic.value("available", false)) hbm_known = false;
    hbm += traffic.value("hbm_bytes_read", 0.0) + traffic.value("hbm_bytes_written", 0.0);
    for (Refetch& r : refetches_of(call)) d.refetches.push_back(std::move(r));
    const auto vmem = number_at(call, "vmem_bytes_per_step");
    auto limit = number_at(call, "vmem_limit_bytes");
    if (!limit && target.scoped_vmem_limit())
      limit = static_cast<double>(*target.scoped_vmem_limit());
    if (vmem && (!d.vmem_bytes || *vmem / limit.value_or(1e300) >
                                      *d.vmem_bytes / d.vmem_limit_bytes.value_or(1e300))) {
      d.vmem_bytes = vmem;
      d.vmem_limit_bytes = limit;
    }
  }
  if (hbm_known) d.hbm_bytes = hbm;
  std::sort(d.refetches.begin(), d.refetches.end(),
            [](const Refetch& a, const Refetch& b) { return a.extra_bytes > b.extra_bytes; });

  // The model's split of the time, summed over the calls; any call without a prediction leaves
  // the bound unknown (a partial sum would pick the wrong bound).
  bool predicted = predictions.is_array() && !predictions.empty();
  double compute = 0, memory = 0, overhead = 0;
  for (const json& p : predictions) {
    const auto c = number_at(p, "compute_s"), m = number_at(p, "memory_s"),
               o = number_at(p, "overhead_s");
    if (!c || !m || !o) {
      predicted = false;
      break;
    }
    compute += *c;
    memory += *m;
    overhead += *o;
  }
  if (predicted) {
    d.compute_s = compute;
    d.memory_s = memory;
    d.overhead_s = overhead;
    if (overhead >= compute && overhead >= memory)
      d.bound = "grid overhead";
    else if (memory >= compute)
      d.bound = "HBM";
    else
      d.bound = work.matmul_flops && *work.matmul_flops == 0 ? "compute (VPU)" : "compute";
  }
  // Over the budget, the kernel does not fit whatever the model says about time.
  if (d.vmem_bytes && d.vmem_limit_bytes && *d.vmem_bytes > *d.vmem_limit_bytes) d.bound = "VMEM";
  d.summary = summary_of(d);
  return d;
}

std::vector<std::string> answering_strategies(const Diagnosis& d) {
  if (d.bound == "VMEM") return {"accumulator_f32", "buffering", "block_sizes", "autotune"};
  if (d.bound == "grid overhead") return {"block_sizes", "autotune"};
  if (d.bound == "HBM" && !d.refetches.empty()) return {"block_sizes", "autotune"};
  if (d.bound == "HBM") return {"block_sizes", "buffering", "autotune"};
  if (d.bound.rfind("compute", 0) == 0)
    return {"dimension_semantics", "accumulator_f32", "block_sizes", "autotune"};
  return {};
}

int preferred_block_direction(const Diagnosis& d) {
  if (d.bound == "VMEM") return -1;
  if (d.bound == "grid overhead" || (d.bound == "HBM" && !d.refetches.empty())) return +1;
  return 0;
}

std::string answer_text(const Diagnosis& d, const std::string& proposal_description) {
  return (d.summary.empty() ? d.bound : d.summary) + " -> " + proposal_description;
}

}  // namespace mk::agents
