#include "cli/kernel_commands.h"

#include <csignal>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/argument_reader.h"
#include "cli/host_session.h"
#include "cli/source_file.h"
#include "source/analysis/vmem.h"
#include "source/syntax/normalize.h"
#include "tpu/jobs/kernel_jobs.h"
#include "tpu/jobs/predictions.h"

namespace mk::cli {

using nlohmann::json;

namespace {

constexpr const char* kKernelUsage =
    "usage: maxkernel {lower|test|profile} FILE[::KERNEL] [options]\n"
    "  --host NAME        host to run on (default: local); --host a,b: the least busy of them\n"
    "  --hosts FILE       JSON list of hosts ({name, kind: local|ssh|command, ...}; see "
    "docs/hosts.md)\n"
    "  --python PATH      python with JAX for the local host\n"
    "  --format text|json\n"
    "  --timeout SECONDS  per request (default 300)\n"
    "  --no-cache         test: evaluate even if a cached verdict exists\n"
    "  --store PATH       knowledge store (SQLite) for the evaluation cache\n"
    "  --seeds N,N,...    test: input seeds (default: fresh random seeds)\n"
    "  --native           lower: for this machine's platform instead of TPU\n"
    "  --target GEN       lower: TPU generation for the predicted time (default v5e)\n"
    "Exit status: 0 success (lowered / correct), 1 the kernel failed (lowering error, wrong\n"
    "result), 2 bad usage or no task, 3 the host failed (unreachable, crashed, timed out).\n";

void print_error(const json& body, const std::string& file) {
  const json& e = body.value("error", json::object());
  std::cout << "error (" << e.value("kind", std::string("?"))
            << "): " << e.value("message", std::string()) << "\n";
  for (const auto& loc : e.value("locations", json::array())) {
    std::cout << "  " << file << ":" << loc.value("line", 0) << ":" << loc.value("column", 0)
              << ": " << loc.value("message", std::string()) << "\n";
  }
}

void print_lower(const json& b, const std::string& file) {
  if (!b.value("ok", false)) return print_error(b, file);
  std::cout << "lowered for " << b.value("lowered_for", std::string("?")) << ": "
            << b.value("num_pallas_calls", 0) << " pallas_call(s)\n";
  for (const auto& call : b.value("pallas_calls", json::array())) {
    std::cout << "  " << call.value("kernel", std::string("?")) << "  grid "
              << call.value("grid", json::array()).dump() << "  VMEM/step "
              << call.value("vmem_bytes_per_step", json()).dump() << " B\n";
    for (const auto& op : call.value("operands", json::array())) {
      std::cout << "    " << op.value("role", std::string("")) << " block "
                << op.value("block_shape", json()).dump() << " of "
                << op.value("array_shape", json()).dump() << " "
                << op.value("dtype", std::string("")) << "\n";
    }
  }
  if (b.contains("cost")) std::cout << "  cost: " << b["cost"].dump() << "\n";
}

void print_test(const json& b, const std::string& file, bool from_cache) {
  if (!b.value("ok", false)) return print_error(b, file);
  const bool correct = b.value("correct", false);
  std::cout << (correct ? "correct" : "WRONG") << (from_cache ? " (from the evaluation cache)" : "")
            << "\n";
  std::cout << "  seeds: " << b.value("seeds", json::array()).dump() << ", both run orders\n";
  if (!correct && b.contains("failure") && b["failure"].is_object()) {
    std::cout << "  failure (" << b["failure"].value("kind", std::string("?"))
              << "): " << b["failure"].value("message", std::string()) << "\n";
  }
  if (b.contains("timing") && b["timing"].is_object()) {
    const json& t = b["timing"];
    const std::string kind = t.value("time_kind", b.value("time_kind", std::string("?")));
    auto line = [&](const char* who) {
      if (!t.contains(who)) return;
      const json& s = t[who];
      std::cout << "  " << who << ": " << analysis::format_seconds(s.value("median_s", 0.0))
                << " median (p10 " << analysis::format_seconds(s.value("p10_s", 0.0)) << ", p90 "
                << analysis::format_seconds(s.value("p90_s", 0.0)) << ", " << s.value("runs", 0)
                << " runs)\n";
    };
    line("candidate");
    line("reference");
    if (kind == "interpret") {
      std::cout
          << "  time kind: interpret (Pallas interpret mode on the CPU: correctness is real, the "
             "time is not a kernel speedup)\n";
    } else if (b.contains("speedup") && b["speedup"].is_number()) {
      std::cout << "  speedup vs reference: " << b["speedup"].get<double>() << "x (" << kind
                << " time)\n";
    }
  }
}

void print_predictions(const json& predictions) {
  for (const json& p : predictions) {
    if (p.contains("unavailable")) {
      std::cout << "  " << p.value("kernel", std::string("?")) << ": no prediction ("
                << p["unavailable"].get<std::string>() << ")\n";
      continue;
    }
    char line[256];
    std::snprintf(
        line, sizeof line,
        "  %s: %s %s, %s-bound (compute %s, HBM %s, grid overhead %s; %.3g FLOP/B vs ridge %.3g)\n",
        p.value("kernel", std::string("?")).c_str(),
        analysis::format_seconds(p["predicted_s"].get<double>()).c_str(),
        p["label"].get<std::string>().c_str(), p["bound"].get<std::string>().c_str(),
        analysis::format_seconds(p["compute_s"].get<double>()).c_str(),
        analysis::format_seconds(p["memory_s"].get<double>()).c_str(),
        analysis::format_seconds(p["overhead_s"].get<double>()).c_str(),
        p["arithmetic_intensity"].get<double>(), p["ridge_intensity"].get<double>());
    std::cout << line;
  }
}

void print_profile(const json& b, const std::string& file) {
  if (!b.value("ok", false)) return print_error(b, file);
  std::cout << b.dump(2) << "\n";
}

}  // namespace

int run_kernel_command(const std::string& command, const std::vector<std::string>& args) {
  std::string target_spec, format = "text";
  std::string target_name = "v5e";
  HostOptions host_options;
  bool use_cache = true, native = false;
  json seeds;
  if (auto status = read_arguments(args, command, kKernelUsage, [&](ArgumentReader& r) {
        if (take_host_option(r, host_options, &use_cache)) return true;
        if (r.is("--format")) {
          format = r.value();
        } else if (r.is("--seeds")) {
          seeds = json::array();
          const std::string list = r.value();
          for (size_t p = 0; p < list.size();) {
            const size_t q = list.find(',', p);
            seeds.push_back(std::stoll(list.substr(p, q - p)));
            p = q == std::string::npos ? list.size() : q + 1;
          }
        } else if (r.is("--native")) {
          native = true;
        } else if (r.is("--target")) {
          target_name = r.value();
        } else if (!r.is_option()) {
          take_single_positional(r, target_spec, "one FILE[::KERNEL] at a time");
        } else {
          return false;
        }
        return true;
      }))
    return *status;
  if (target_spec.empty() || (format != "text" && format != "json")) {
    std::cerr << kKernelUsage;
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);

  tpu::KernelRequest request;
  const size_t sep = target_spec.find("::");
  request.file = std::filesystem::absolute(target_spec.substr(0, sep));
  if (sep != std::string::npos) request.kernel = target_spec.substr(sep + 2);
  const knowledge::TpuGeneration* generation = knowledge::find_tpu_generation(target_name);
  if (!generation) {
    std::cerr << "maxkernel " << command << ": unknown TPU generation '" << target_name
              << "' (known: " << knowledge::known_generation_names() << ")\n";
    return 2;
  }
  AnalysedFile file = analyse_file(request.file, *generation);
  if (!file.read_error.empty()) {
    std::cerr << "maxkernel " << command << ": " << file.read_error << "\n";
    return 2;
  }
  request.source = file.text;
  request.normalized_source = syntax::normalized_python_source(file.text);
  std::string reason;
  auto task = tpu::locate_task(request.file, file.analysis.model.task.form() == "infile", reason);
  if (!task) {
    std::cerr << "maxkernel " << command << ": " << reason << "\n";
    return 2;
  }
  request.task = *task;
  if (command == "lower") request.options["target"] = native ? "native" : "tpu";
  if (!seeds.is_null()) request.options["seeds"] = seeds;

  host_options.open_store = command == "test";
  std::string error;
  bool no_host_answered = false;
  auto session = open_host_session(host_options, error, &no_host_answered);
  if (!session) {
    std::cerr << "maxkernel " << command << ": " << error << "\n";
    return no_host_answered ? 3 : 2;
  }
  tpu::KernelJobs& jobs = *session->jobs;
  tpu::JobResult result = command == "lower"  ? jobs.lower(request)
                          : command == "test" ? jobs.test(request, use_cache)
                                              : jobs.profile(request);
  // The host that ran it (of several, the one the pool chose); a cache hit names the pool.
  const std::string host_name = result.host.empty() ? session->host->name() : result.host;
  session.reset();

  const tpu::WorkerReply& reply = result.reply;
  const bool infrastructure_failure = reply.status != tpu::WorkerReply::Status::Ok &&
                                      reply.status != tpu::WorkerReply::Status::Failed;
  if (format == "json") {
    json out = {{"command", command},
                {"file", request.file.string()},
                {"host", host_name},
                {"status", tpu::to_string(reply.status)},
                {"from_cache", result.from_cache},
                {"result", reply.body}};
    if (!reply.message.empty()) out["message"] = reply.message;
    if (command == "lower" && reply.body.contains("pallas_calls")) {
      out["predicted"] = tpu::predict_pallas_calls(reply.body["pallas_calls"], *generation,
                                                   reply.body.value("cost", json()));
    }
    if (infrastructure_failure) out["stderr_tail"] = reply.stderr_tail;
    std::cout << out.dump(2) << "\n";
  } else if (infrastructure_failure) {
    std::cout << "host " << host_name << ": " << tpu::to_string(reply.status) << ": "
              << reply.message << "\n";
    if (!reply.stderr_tail.empty())
      std::cout << "worker stderr (last lines):\n" << reply.stderr_tail;
  } else {
    std::cout << request.file.filename().string() << (request.kernel ? "::" + *request.kernel : "")
              << " on " << host_name << "\n";
    if (command == "lower") {
      print_lower(reply.body, request.file.string());
      if (reply.body.contains("pallas_calls")) {
        print_predictions(tpu::predict_pallas_calls(reply.body["pallas_calls"], *generation,
                                                    reply.body.value("cost", json())));
      }
    }
    if (command == "test") print_test(reply.body, request.file.string(), result.from_cache);
    if (command == "profile") print_profile(reply.body, request.file.string());
  }
  if (infrastructure_failure) return 3;
  if (!reply.body.value("ok", false)) return 1;
  if (command == "test" && !reply.body.value("correct", false)) return 1;
  return 0;
}

}  // namespace mk::cli
