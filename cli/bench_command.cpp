#include "cli/bench_command.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agents/report/bench_summary.h"
#include "agents/report/html.h"
#include "cli/host_selection.h"
#include "knowledge/store.h"
#include "lsp/syntax/normalize.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kUsage =
    "usage: maxkernel bench SUITE_DIR [options]\n"
    "  SUITE_DIR          a JAXBench-format suite: one folder per task with baseline.py and the\n"
    "                     candidate optimized.py (candidate.py is accepted too); or one such "
    "folder\n"
    "  --format text|json\n"
    "  --host NAME        host to run on (default: local)\n"
    "  --hosts FILE       JSON list of hosts (see docs/hosts.md)\n"
    "  --python PATH      python with JAX for the local host\n"
    "  --timeout SECONDS  per task (default 600)\n"
    "  --store PATH       knowledge store (SQLite) for the evaluation cache\n"
    "  --no-cache         evaluate even when a cached verdict exists\n"
    "Speedups vs XLA are shown only for device-measured time; on a CPU host (interpret mode) the\n"
    "column says n/a. Exit status: 0 the suite ran (even with incorrect tasks), 2 bad usage or no\n"
    "tasks, 3 the host failed for every task.\n";

// JAXBench names the Pallas version of a task optimized.py; this project's examples use
// candidate.py. The first that exists is evaluated.
constexpr const char* kCandidateNames[] = {"optimized.py", "candidate.py"};

struct SuiteTask {
  std::string name;
  fs::path dir;
  std::optional<fs::path> candidate;
};

std::optional<fs::path> candidate_in(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : kCandidateNames)
    if (fs::is_regular_file(dir / name, ec)) return dir / name;
  return std::nullopt;
}

// The suite's tasks by folder name; a folder that itself has a baseline.py is a one-task suite.
std::vector<SuiteTask> find_tasks(const fs::path& suite) {
  std::error_code ec;
  std::vector<SuiteTask> tasks;
  if (fs::is_regular_file(suite / "baseline.py", ec)) {
    tasks.push_back({suite.filename().string(), suite, candidate_in(suite)});
    return tasks;
  }
  for (const auto& entry : fs::directory_iterator(suite, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec) || name.starts_with(".") || name == "__pycache__") continue;
    if (!fs::is_regular_file(entry.path() / "baseline.py", ec)) continue;
    tasks.push_back({name, entry.path(), candidate_in(entry.path())});
  }
  std::sort(tasks.begin(), tasks.end(),
            [](const SuiteTask& a, const SuiteTask& b) { return a.name < b.name; });
  return tasks;
}

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

report::BenchTaskResult evaluate_task(const SuiteTask& suite_task, tpu::KernelJobs& jobs,
                                      bool use_cache, bool& host_failed) {
  report::BenchTaskResult result;
  result.name = suite_task.name;
  host_failed = false;
  if (!suite_task.candidate) {
    result.failure = "no candidate (optimized.py or candidate.py) beside baseline.py";
    return result;
  }
  result.candidate = suite_task.candidate->string();
  result.evaluated = true;
  const auto source = read_text(*suite_task.candidate);
  if (!source) {
    result.failure = "cannot read " + result.candidate;
    return result;
  }
  std::string reason;
  auto task = tpu::locate_task(*suite_task.candidate, false, reason);
  if (!task) {
    result.failure = reason;
    return result;
  }
  tpu::KernelRequest request;
  request.file = *suite_task.candidate;
  request.source = *source;
  request.normalized_source = syntax::normalized_python_source(*source);
  request.task = *task;

  const auto started = std::chrono::steady_clock::now();
  const tpu::JobResult job = jobs.test(request, use_cache);
  result.host_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.from_cache = job.from_cache;
  const tpu::WorkerReply& reply = job.reply;
  if (reply.status != tpu::WorkerReply::Status::Ok &&
      reply.status != tpu::WorkerReply::Status::Failed) {
    host_failed = true;
    result.failure = std::string("host: ") + tpu::to_string(reply.status) + ": " + reply.message;
    return result;
  }
  report::apply_evaluation(result, reply.body.dump());
  return result;
}

std::string yes_no(bool value) {
  return value ? "yes" : "no";
}

std::string fraction_text(const std::optional<double>& fraction) {
  return fraction ? report::format_number(*fraction, 3) : std::string("n/a");
}

std::string fast_p_name(double p) {
  std::string number = report::format_number(p, 1);
  if (number.ends_with(".0")) number.resize(number.size() - 2);
  return "fast_" + number;
}

std::string percent(int part, int whole) {
  if (whole == 0) return "-";
  return report::format_number(100.0 * part / whole, 0) + "%";
}

void print_text(const fs::path& suite, const std::string& host,
                const std::vector<report::BenchTaskResult>& results,
                const report::BenchSummary& summary) {
  size_t name_width = 4;
  for (const auto& r : results) name_width = std::max(name_width, r.name.size());
  auto pad = [](std::string text, size_t width) {
    if (text.size() < width) text.append(width - text.size(), ' ');
    return text;
  };
  std::cout << "maxkernel bench " << suite.string() << " on " << host << ": " << summary.tasks
            << " task(s)"
            << (summary.skipped ? ", " + std::to_string(summary.skipped) + " skipped" : "")
            << "\n\n";
  std::cout << pad("task", name_width) << "  compiled  correct  " << pad("speedup vs XLA", 18)
            << pad("time kind", 11) << "host s  cache\n";
  for (const auto& r : results) {
    std::cout << pad(r.name, name_width) << "  " << pad(r.evaluated ? yes_no(r.compiled) : "-", 8)
              << "  " << pad(r.evaluated ? yes_no(r.correct) : "-", 7) << "  "
              << pad(report::speedup_cell(r), 18)
              << pad(r.time_kind.empty() ? "-" : r.time_kind, 11)
              << pad(report::format_number(r.host_seconds, 1), 6) << "  "
              << (r.from_cache ? "hit" : "") << "\n";
    if (!r.failure.empty()) std::cout << pad("", name_width) << "  -> " << r.failure << "\n";
  }
  std::cout << "\ncompiled " << summary.compiled << "/" << summary.tasks << " ("
            << percent(summary.compiled, summary.tasks) << "), correct " << summary.correct << "/"
            << summary.tasks << " (" << percent(summary.correct, summary.tasks) << ")\n";
  std::cout << "geomean speedup vs XLA: "
            << (summary.geomean_speedup
                    ? report::format_speedup(*summary.geomean_speedup) + " over " +
                          std::to_string(summary.with_speedup) + " task(s) (device time)"
                    : std::string("n/a"))
            << "\n";
  if (!summary.speedup_note.empty()) std::cout << "  (" << summary.speedup_note << ")\n";
  std::cout << "fast_p:";
  for (const auto& f : summary.fast_p)
    std::cout << "  " << fast_p_name(f.p) << " " << fraction_text(f.fraction);
  std::cout << "\ncost: " << report::format_number(summary.host_seconds, 1) << " host seconds, "
            << summary.cache_hits << " cache hit(s)\n";
}

json to_json(const fs::path& suite, const std::string& host,
             const std::vector<report::BenchTaskResult>& results,
             const report::BenchSummary& summary) {
  auto optional_number = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
  json tasks = json::array();
  for (const auto& r : results) {
    tasks.push_back({{"name", r.name},
                     {"candidate", r.candidate.empty() ? json() : json(r.candidate)},
                     {"evaluated", r.evaluated},
                     {"compiled", r.compiled},
                     {"correct", r.correct},
                     {"time_kind", r.time_kind.empty() ? json() : json(r.time_kind)},
                     {"speedup", optional_number(r.speedup)},
                     {"speedup_display", report::speedup_cell(r)},
                     {"candidate_median_s", optional_number(r.candidate_median_s)},
                     {"reference_median_s", optional_number(r.reference_median_s)},
                     {"failure", r.failure.empty() ? json() : json(r.failure)},
                     {"host_seconds", r.host_seconds},
                     {"from_cache", r.from_cache}});
  }
  json fast_p = json::object();
  for (const auto& f : summary.fast_p) fast_p[fast_p_name(f.p)] = optional_number(f.fraction);
  auto rate = [&](int part) {
    return summary.tasks ? json(static_cast<double>(part) / summary.tasks) : json();
  };
  return {
      {"suite", suite.string()},
      {"host", host},
      {"tasks", tasks},
      {"summary",
       {{"tasks", summary.tasks},
        {"skipped", summary.skipped},
        {"compiled", summary.compiled},
        {"correct", summary.correct},
        {"compile_rate", rate(summary.compiled)},
        {"correct_rate", rate(summary.correct)},
        {"tasks_with_speedup", summary.with_speedup},
        {"geomean_speedup", optional_number(summary.geomean_speedup)},
        {"speedup_note", summary.speedup_note.empty() ? json() : json(summary.speedup_note)},
        {"fast_p", fast_p},
        {"cost", {{"host_seconds", summary.host_seconds}, {"cache_hits", summary.cache_hits}}}}}};
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  std::string suite_arg, host_name = "local", hosts_file, python, format = "text", store_path;
  double timeout_s = 600;
  bool use_cache = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    try {
      if (a == "--host")
        host_name = value();
      else if (a == "--hosts")
        hosts_file = value();
      else if (a == "--python")
        python = value();
      else if (a == "--format")
        format = value();
      else if (a == "--store")
        store_path = value();
      else if (a == "--timeout") {
        timeout_s = std::stod(value());
        if (!(timeout_s > 0)) throw std::invalid_argument("--timeout must be positive");
      } else if (a == "--no-cache")
        use_cache = false;
      else if (a == "-h" || a == "--help") {
        std::cout << kUsage;
        return 0;
      } else if (a.starts_with("-"))
        throw std::invalid_argument("unknown option " + a);
      else if (suite_arg.empty())
        suite_arg = a;
      else
        throw std::invalid_argument("one SUITE_DIR at a time");
    } catch (const std::exception& e) {
      std::cerr << "maxkernel bench: " << e.what() << "\n" << kUsage;
      return 2;
    }
  }
  if (suite_arg.empty() || (format != "text" && format != "json")) {
    std::cerr << "maxkernel bench: "
              << (suite_arg.empty() ? "give a SUITE_DIR" : "--format is text or json") << "\n"
              << kUsage;
    return 2;
  }
  std::error_code ec;
  const fs::path suite = fs::absolute(suite_arg);
  if (!fs::is_directory(suite, ec)) {
    std::cerr << "maxkernel bench: " << suite.string() << " is not a directory\n";
    return 2;
  }
  const std::vector<SuiteTask> suite_tasks = find_tasks(suite);
  if (suite_tasks.empty()) {
    std::cerr << "maxkernel bench: no JAXBench tasks in " << suite.string()
              << " (expected folders with a baseline.py and an optimized.py)\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);

  std::string error;
  auto host_config = select_host(host_name, hosts_file, python, error);
  if (!host_config) {
    std::cerr << "maxkernel bench: " << error << "\n";
    return 2;
  }
  host_config->request_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  auto worker_dir = tpu::find_worker_directory();
  if (!worker_dir) {
    std::cerr << "maxkernel bench: cannot find the worker (tpu/worker); set MAXKERNEL_WORKER_DIR\n";
    return 2;
  }
  auto bundle = tpu::load_worker_bundle(*worker_dir, error);
  if (!bundle) {
    std::cerr << "maxkernel bench: " << error << "\n";
    return 2;
  }
  std::unique_ptr<knowledge::Store> store;
  try {
    store = std::make_unique<knowledge::Store>(store_path.empty() ? knowledge::default_store_path()
                                                                  : fs::path(store_path));
  } catch (const std::exception& e) {
    std::cerr << "maxkernel bench: evaluation cache disabled: " << e.what() << "\n";
  }

  tpu::KernelHost host(*host_config, *bundle);
  tpu::KernelJobs jobs(host, store.get());
  std::vector<report::BenchTaskResult> results;
  int host_failures = 0, attempted = 0;
  for (size_t k = 0; k < suite_tasks.size(); ++k) {
    std::cerr << "[" << k + 1 << "/" << suite_tasks.size() << "] " << suite_tasks[k].name << " ..."
              << std::flush;
    bool host_failed = false;
    results.push_back(evaluate_task(suite_tasks[k], jobs, use_cache, host_failed));
    const auto& r = results.back();
    if (r.evaluated) ++attempted;
    if (host_failed) ++host_failures;
    std::cerr << " "
              << (!r.evaluated ? "skipped"
                  : r.correct  ? "correct"
                               : "not correct")
              << " (" << report::format_number(r.host_seconds, 1) << " s"
              << (r.from_cache ? ", cached" : "") << ")\n";
  }
  host.shutdown();

  const report::BenchSummary summary = report::summarize_bench(results);
  if (format == "json")
    std::cout << to_json(suite, host_config->name, results, summary).dump(2) << "\n";
  else
    print_text(suite, host_config->name, results, summary);
  return attempted > 0 && host_failures == attempted ? 3 : 0;
}

}  // namespace mk::cli
