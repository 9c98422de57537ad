#include "cli/kernel_commands.h"

#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/argument_reader.h"
#include "cli/host_session.h"
#include "cli/source_file.h"
#include "service/kernel_checks.h"
#include "service/kernel_requests.h"
#include "service/operand_errors.h"
#include "source/analysis/vmem.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::cli {

using nlohmann::json;

namespace {

constexpr const char* kKernelUsage =
    "usage: maxkernel {lower|test|profile} FILE[::KERNEL] [options]\n"
    "  --host NAME        host to run on (default: local); --host a,b: the least busy of them\n"
    "  --hosts FILE       JSON list of hosts ({name, kind: local|ssh|command|ray, ...}; see "
    "docs/hosts.md)\n"
    "  --python PATH      python with JAX for the local host\n"
    "  --format text|json\n"
    "  --timeout SECONDS  per request (default 300)\n"
    "  --no-cache         test: evaluate even if a cached verdict exists\n"
    "  --store PATH       knowledge store (SQLite) for the evaluation cache\n"
    "  --seeds N,N,...    test: input seeds (default: fresh random seeds)\n"
    "  --native           lower: for this machine's platform instead of TPU\n"
    "  --target GEN       lower: TPU generation for the predicted time; profile: for the\n"
    "                     diagnosis (default v5e)\n"
    "Exit status: 0 success (lowered / correct), 1 the kernel failed (lowering error, wrong\n"
    "result), 2 bad usage or no task, 3 the host failed (unreachable, crashed, timed out).\n";

void print_locations(const service::KernelCheck& c, const std::string& file) {
  for (const service::SourceLocation& loc : c.locations)
    std::cout << "  " << file << ":" << loc.line << ":" << loc.column << ": " << loc.message
              << "\n";
}

void print_error(const service::KernelCheck& c, const std::string& file) {
  std::cout << "error (" << (c.error_kind.empty() ? "?" : c.error_kind) << "): " << c.error_message
            << "\n";
  print_locations(c, file);
}

// A lowering error that names an operand goes on that operand's BlockSpec entry, then the kernel's
// def and pallas_call lines: the placement the editor's on-save lowering makes, by the same call.
bool print_operand_error(const service::KernelCheck& c, const AnalysedFile& analysed,
                         const std::string& file) {
  for (service::Finding f : c.line_findings) {
    if (!service::place_on_operand(f, c.error_message, analysed.analysis.model, analysed.lines))
      continue;
    const auto at = analysed.position(f.span ? f.span->start : 0);
    std::cout << "error (" << (c.error_kind.empty() ? "?" : c.error_kind)
              << "): " << c.error_message << "\n";
    std::cout << "  " << file << ":" << f.line + 1 << ":" << at.character + 1
              << ": the block spec the error names\n";
    for (const service::SourceLocation& r : f.related)
      std::cout << "  " << file << ":" << r.line << ":" << r.column << ": " << r.message << "\n";
    return true;
  }
  return false;
}

void print_lower(const service::KernelCheck& c, const std::string& file,
                 const AnalysedFile& analysed) {
  if (c.verdict != service::Verdict::Passed) {
    if (!print_operand_error(c, analysed, file)) print_error(c, file);
    return;
  }
  std::cout << "lowered for " << c.lowered_for << ": " << c.num_pallas_calls << " pallas_call(s)\n";
  for (const service::LoweredCall& call : c.lowered) {
    std::cout << "  " << call.kernel << "  grid " << call.grid << "  VMEM/step "
              << call.vmem_bytes_text << " B\n";
    for (const service::LoweredOperand& op : call.operands) {
      std::cout << "    " << op.role << " block " << op.block_shape << " of " << op.array_shape
                << " " << op.dtype << "\n";
    }
  }
  if (!c.cost.empty()) std::cout << "  cost: " << c.cost << "\n";
}

void print_timing(const char* who, const service::TimingStats& s) {
  std::cout << "  " << who << ": " << analysis::format_seconds(s.median_s) << " median (p10 "
            << analysis::format_seconds(s.p10_s) << ", p90 " << analysis::format_seconds(s.p90_s)
            << ", " << s.runs << " runs)\n";
}

void print_test(const service::KernelCheck& c, const std::string& file) {
  if (c.verdict == service::Verdict::Failed) return print_error(c, file);
  const bool correct = c.verdict == service::Verdict::Passed;
  std::cout << (correct ? "correct" : "WRONG")
            << (c.from_cache ? " (from the evaluation cache)" : "") << "\n";
  std::string seeds;
  for (const std::string& seed : c.seeds) seeds += (seeds.empty() ? "" : ",") + seed;
  std::cout << "  seeds: [" << seeds << "], both run orders\n";
  if (!correct) {
    std::cout << "  failure (" << (c.error_kind.empty() ? "?" : c.error_kind)
              << "): " << c.error_message << "\n";
    print_locations(c, file);  // the lines a work verdict names, as the editor shows them
  }
  if (c.timing) {
    print_timing("candidate", c.timing->candidate);
    if (c.timing->reference) print_timing("reference", *c.timing->reference);
    if (c.timing->time_kind == "interpret") {
      std::cout
          << "  time kind: interpret (Pallas interpret mode on the CPU: correctness is real, the "
             "time is not a kernel speedup)\n";
    } else if (c.speedup) {
      std::cout << "  speedup vs reference: " << *c.speedup << "x (" << c.timing->time_kind
                << " time)\n";
    }
  }
}

void print_predictions(const std::vector<service::Prediction>& predictions) {
  for (const service::Prediction& p : predictions) {
    if (!p.unavailable.empty()) {
      std::cout << "  " << p.kernel << ": no prediction (" << p.unavailable << ")\n";
      continue;
    }
    char line[256];
    std::snprintf(
        line, sizeof line,
        "  %s: %s %s, %s-bound (compute %s, HBM %s, grid overhead %s; %.3g FLOP/B vs ridge %.3g)\n",
        p.kernel.c_str(), analysis::format_seconds(p.predicted_s).c_str(), p.label.c_str(),
        p.bound.c_str(), analysis::format_seconds(p.compute_s).c_str(),
        analysis::format_seconds(p.memory_s).c_str(),
        analysis::format_seconds(p.overhead_s).c_str(), p.arithmetic_intensity, p.ridge_intensity);
    std::cout << line;
  }
}

void print_profile(const service::KernelCheck& c, const std::string& file) {
  if (c.verdict != service::Verdict::Passed) return print_error(c, file);
  std::cout << c.reply_body.dump(2) << "\n";  // the profile's whole summary, as the worker wrote it
  if (!c.diagnosis) {
    std::cout << "diagnosis: none (the kernel did not lower for TPU, or has no pallas_call)\n";
    return;
  }
  std::cout << "diagnosis: " << c.diagnosis->label << "\n";
  for (const std::string& line : c.diagnosis->lines) std::cout << "  " << line << "\n";
}

}  // namespace

int run_kernel_command(const std::string& command, const std::vector<std::string>& args) {
  std::string target_spec, format = "text";
  std::string target_name = "v5e";
  HostOptions host_options;
  bool use_cache = true, native = false;
  json seeds;
  if (auto status = read_arguments(
          args, command, kKernelUsage,
          [&](ArgumentReader& r) {
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
            } else {
              return false;
            }
            return true;
          },
          SinglePositional{&target_spec, "one FILE[::KERNEL] at a time"}))
    return *status;
  if (target_spec.empty() || (format != "text" && format != "json")) {
    std::cerr << kKernelUsage;
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);

  const size_t sep = target_spec.find("::");
  const std::filesystem::path path = std::filesystem::absolute(target_spec.substr(0, sep));
  std::optional<std::string> kernel;
  if (sep != std::string::npos) kernel = target_spec.substr(sep + 2);
  const knowledge::TpuGeneration* generation = knowledge::find_tpu_generation(target_name);
  if (!generation) {
    std::cerr << "maxkernel " << command << ": unknown TPU generation '" << target_name
              << "' (known: " << knowledge::known_generation_names() << ")\n";
    return 2;
  }
  AnalysedFile file = analyse_file(path, *generation);
  if (!file.read_error.empty()) {
    std::cerr << "maxkernel " << command << ": " << file.read_error << "\n";
    return 2;
  }
  json worker_options = json::object();
  if (command == "lower") worker_options["target"] = native ? "native" : "tpu";
  // Without a TPU attached, the worker then compiles the lowering for this generation with the
  // TPU compiler (libtpu): Mosaic's and XLA's own refusals, and static cycles.
  if (command == "lower" && !native) worker_options["generation"] = target_name;
  if (!seeds.is_null()) worker_options["seeds"] = seeds;
  std::string reason;
  const std::optional<tpu::KernelRequest> made = service::kernel_request(
      path, file.text, file.analysis.model.task.form() == "infile", reason, kernel, worker_options);
  if (!made) {
    std::cerr << "maxkernel " << command << ": " << reason << "\n";
    return 2;
  }
  const tpu::KernelRequest& request = *made;

  host_options.open_store = command == "test";
  std::string error;
  bool no_host_answered = false;
  auto session = open_host_session(host_options, error, &no_host_answered);
  if (!session) {
    std::cerr << "maxkernel " << command << ": " << error << "\n";
    return no_host_answered ? 3 : 2;
  }
  const service::KernelOp op = command == "lower"  ? service::KernelOp::Lower
                               : command == "test" ? service::KernelOp::Test
                                                   : service::KernelOp::Profile;
  service::KernelCheckOptions options;
  options.use_cache = use_cache;
  options.target = generation;
  const service::KernelCheck check =
      service::run_kernel_check(op, *session->host, session->store.get(), request, options);
  session.reset();

  const bool host_failed =
      check.verdict == service::Verdict::NotRun || check.verdict == service::Verdict::Cancelled;
  if (format == "json") {
    json out = {
        {"command", command},     {"file", request.file.string()},  {"host", check.host},
        {"status", check.status}, {"from_cache", check.from_cache}, {"result", check.reply_body}};
    if (!check.message.empty()) out["message"] = check.message;
    if (op == service::KernelOp::Lower && check.lists_calls) out["predicted"] = check.predicted;
    if (op == service::KernelOp::Profile)
      out["diagnosis"] = check.diagnosis ? service::to_json(*check.diagnosis) : json();
    if (host_failed) out["stderr_tail"] = check.stderr_tail;
    std::cout << out.dump(2) << "\n";
  } else if (host_failed) {
    std::cout << "host " << check.host << ": " << check.status << ": " << check.message << "\n";
    if (!check.stderr_tail.empty())
      std::cout << "worker stderr (last lines):\n" << check.stderr_tail;
  } else {
    std::cout << request.file.filename().string() << (request.kernel ? "::" + *request.kernel : "")
              << " on " << check.host << "\n";
    if (op == service::KernelOp::Lower) {
      print_lower(check, request.file.string(), file);
      print_predictions(check.predictions);
    }
    if (op == service::KernelOp::Test) print_test(check, request.file.string());
    if (op == service::KernelOp::Profile) print_profile(check, request.file.string());
  }
  if (host_failed) return 3;
  return check.verdict == service::Verdict::Passed ? 0 : 1;
}

}  // namespace mk::cli
