#include "cli/bench_command.h"

#include "cli/bench_optimize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agents/report/bench_summary.h"
#include "agents/report/html.h"
#include "cli/argument_reader.h"
#include "cli/host_session.h"
#include "cli/source_file.h"
#include "knowledge/store.h"
#include "service/kernel_requests.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kBenchUsage =
    "usage: maxkernel bench SUITE_DIR [options]\n"
    "  SUITE_DIR          a JAXBench-format suite: one folder per task with baseline.py and the\n"
    "                     candidate optimized.py (candidate.py is accepted too); or one such "
    "folder\n"
    "  --format text|json\n"
    "  --host NAME        host to run on (default: local); --host a,b spreads tasks over hosts\n"
    "  --hosts FILE       JSON list of hosts (see docs/hosts.md)\n"
    "  --python PATH      python with JAX for the local host\n"
    "  --timeout SECONDS  per task (default 600)\n"
    "  --store PATH       knowledge store (SQLite) for the evaluation cache\n"
    "  --no-cache         evaluate even when a cached verdict exists\n"
    "  --seeds N,N,...    input seeds for every task (default: fresh random seeds)\n"
    "  --timing JSON      timing loop for every task, e.g. '{\"warmup\": 1, \"min_runs\": 5,\n"
    "                     \"max_runs\": 5}' (fields of the worker's evaluate `timing`)\n"
    "  --optimize         run the agent on every task from its reference instead (see\n"
    "                     maxkernel bench --optimize --help)\n"
    "  --jobs N           tasks evaluated at once (default: the host's timing workers: 1 per\n"
    "                     device; on a CPU host as many as its compile workers)\n"
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

report::BenchTaskResult evaluate_task(const SuiteTask& suite_task, tpu::KernelJobs& jobs,
                                      const json& options, bool use_cache, bool& host_failed) {
  report::BenchTaskResult result;
  result.name = suite_task.name;
  host_failed = false;
  if (!suite_task.candidate) {
    result.failure = "no candidate (optimized.py or candidate.py) beside baseline.py";
    return result;
  }
  result.candidate = suite_task.candidate->string();
  result.evaluated = true;
  const auto source = read_text_file(*suite_task.candidate);
  if (!source) {
    result.failure = "cannot read " + result.candidate;
    return result;
  }
  std::string reason;
  const std::optional<tpu::KernelRequest> request =
      service::kernel_request(*suite_task.candidate, *source, false, reason, std::nullopt, options);
  if (!request) {
    result.failure = reason;
    return result;
  }

  const auto started = std::chrono::steady_clock::now();
  const tpu::JobResult job = jobs.test(*request, use_cache);
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

// "11,22,33" -> [11, 22, 33]; anything else is a usage error.
json parse_seeds(const std::string& list) {
  json seeds = json::array();
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma - start);
    size_t used = 0;
    long long seed = 0;
    try {
      seed = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw std::invalid_argument("--seeds wants integers separated by commas, not '" + list + "'");
    seeds.push_back(seed);
    if (comma == std::string::npos) return seeds;
    start = comma + 1;
  }
}

json parse_timing(const std::string& text) {
  json timing;
  try {
    timing = json::parse(text);
  } catch (const json::exception&) {
    throw std::invalid_argument("--timing is not valid JSON: " + text);
  }
  if (!timing.is_object()) throw std::invalid_argument("--timing must be a JSON object");
  return timing;
}

// How the suite ran: when each task started (seconds after the first began), the wall time of
// the whole suite and how many tasks ran at once. Task host seconds overlap when that is > 1.
struct SuiteTiming {
  std::vector<double> started_s;
  double wall_s = 0;
  size_t concurrency = 1;
};

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
                const report::BenchSummary& summary, const SuiteTiming& timing) {
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
  std::cout << "\ncost: " << report::format_number(summary.host_seconds, 1)
            << " host seconds (wall " << report::format_number(timing.wall_s, 1) << " s, up to "
            << timing.concurrency << " at a time), " << summary.cache_hits << " cache hit(s)\n";
}

json to_json(const fs::path& suite, const std::string& host,
             const std::vector<report::BenchTaskResult>& results,
             const report::BenchSummary& summary, const SuiteTiming& timing) {
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
                     {"started_s", timing.started_s.at(tasks.size())},
                     {"from_cache", r.from_cache}});
  }
  json fast_p = json::object();
  for (const auto& f : summary.fast_p) fast_p[fast_p_name(f.p)] = optional_number(f.fraction);
  auto rate = [&](int part) {
    return summary.tasks ? json(static_cast<double>(part) / summary.tasks) : json();
  };
  return {{"suite", suite.string()},
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
            {"cost",
             {{"host_seconds", summary.host_seconds},
              {"wall_seconds", timing.wall_s},
              {"concurrency", timing.concurrency},
              {"cache_hits", summary.cache_hits}}}}}};
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--optimize") != args.end())
    return run_bench_optimize(args);
  std::string suite_arg, format = "text";
  HostOptions host_options;
  host_options.timeout_s = 600;
  bool use_cache = true;
  json options = json::object();  // seeds / timing, the same for every task
  int max_jobs = 0;               // 0: the host's timing workers
  if (auto status = read_arguments(
          args, "bench", kBenchUsage,
          [&](ArgumentReader& r) {
            if (take_host_option(r, host_options, &use_cache)) return true;
            if (r.is("--format"))
              format = r.value();
            else if (r.is("--seeds"))
              options["seeds"] = parse_seeds(r.value());
            else if (r.is("--timing"))
              options["timing"] = parse_timing(r.value());
            else if (r.is("--jobs"))
              max_jobs = r.positive_integer();
            else
              return false;
            return true;
          },
          SinglePositional{&suite_arg, "one SUITE_DIR at a time"}))
    return *status;
  if (suite_arg.empty() || (format != "text" && format != "json")) {
    std::cerr << "maxkernel bench: "
              << (suite_arg.empty() ? "give a SUITE_DIR" : "--format is text or json") << "\n"
              << kBenchUsage;
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
  bool no_host_answered = false;
  auto session = open_host_session(host_options, error, &no_host_answered);
  if (!session) {
    std::cerr << "maxkernel bench: " << error << "\n";
    return no_host_answered ? 3 : 2;
  }
  tpu::HostPool& host = *session->host;  // one host, or several sharing the tasks
  tpu::KernelJobs& jobs = *session->jobs;
  // Tasks run at once up to the host's timing lane (it queues any surplus); results keep the
  // suite's order, and one task's failure never touches another's.
  const size_t task_count = suite_tasks.size();
  const size_t threads = std::min(
      task_count, static_cast<size_t>(max_jobs > 0 ? max_jobs : host.max_slots(tpu::Lane::Timing)));
  std::vector<report::BenchTaskResult> results(task_count);
  std::vector<char> host_failed(task_count, 0);
  SuiteTiming timing;
  timing.concurrency = threads;
  timing.started_s.assign(task_count, 0.0);
  const auto suite_started = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_started).count();
  };
  std::atomic<size_t> next_task{0};
  std::mutex progress_mutex;
  size_t finished = 0;
  auto work = [&] {
    for (size_t k; (k = next_task++) < task_count;) {
      bool failed = false;
      timing.started_s[k] = seconds_since_start();
      try {
        results[k] = evaluate_task(suite_tasks[k], jobs, options, use_cache, failed);
      } catch (const std::exception& e) {
        results[k] = report::BenchTaskResult{};
        results[k].name = suite_tasks[k].name;
        results[k].evaluated = true;
        results[k].failure = std::string("internal error: ") + e.what();
      }
      host_failed[k] = failed ? 1 : 0;
      const auto& r = results[k];
      std::lock_guard<std::mutex> lock(progress_mutex);
      std::cerr << "[" << ++finished << "/" << task_count << "] " << r.name << ": "
                << (!r.evaluated ? "skipped"
                    : r.correct  ? "correct"
                                 : "not correct")
                << " (" << report::format_number(r.host_seconds, 1) << " s"
                << (r.from_cache ? ", cached" : "") << ")\n";
    }
  };
  std::cerr << "maxkernel bench: " << task_count << " task(s), up to " << threads << " at a time\n";
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (auto& t : helpers) t.join();
  timing.wall_s = seconds_since_start();
  host.shutdown();
  int host_failures = 0, attempted = 0;
  for (size_t k = 0; k < task_count; ++k) {
    attempted += results[k].evaluated ? 1 : 0;
    host_failures += host_failed[k];
  }

  const report::BenchSummary summary = report::summarize_bench(results);
  if (format == "json")
    std::cout << to_json(suite, host.name(), results, summary, timing).dump(2) << "\n";
  else
    print_text(suite, host.name(), results, summary, timing);
  return attempted > 0 && host_failures == attempted ? 3 : 0;
}

}  // namespace mk::cli
