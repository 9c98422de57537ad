#include "cli/bench_optimize.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agents/report/html.h"
#include "cli/argument_reader.h"
#include "cli/host_session.h"
#include "cli/source_file.h"
#include "knowledge/tpu_generations.h"
#include "service/budget_defaults.h"
#include "service/generation.h"
#include "service/hosts.h"
#include "service/searches.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kBenchOptimizeUsage =
    "usage: maxkernel bench SUITE_DIR --optimize [options]\n"
    "  Runs the agent on every task of the suite, starting from its reference (XLA = 1.0):\n"
    "  a folder per task with kernel_task.yaml (MaxKernel) or baseline.py (JAXBench); a suite\n"
    "  may group tasks one level down (suite/maxkernel/TASK, suite/jaxbench/TASK).\n"
    "  --mode auto|graph     Auto loop (default) or beam graph search\n"
    "  --budget SPEC         per task, as for optimize (default iterations=3,patience=2)\n"
    "  --llm SPEC            none (default: templates, autotuner and rewrites), replay:FILE, ...\n"
    "  --shrink F            check correctness on each task shrunk by F (CPU hosts); lowering\n"
    "                        and predictions stay at full size\n"
    "  --target GEN          TPU generation of the predictions (default v5e)\n"
    "  --jobs N              tasks optimised at once (default 1)\n"
    "  --host NAME --hosts FILE --python PATH --timeout S --store PATH --no-cache\n"
    "  --format text|json\n"
    "Exit status: 0 the suite ran (whatever its scores), 2 bad usage or no tasks.\n";

struct TaskFolder {
  std::string name;  // "maxkernel/gelu_bias" for a grouped suite
  fs::path dir;
  std::string format;  // "maxkernel" | "jaxbench"
};

std::optional<std::string> task_format(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir / "kernel_task.yaml", ec)) return "maxkernel";
  if (fs::is_regular_file(dir / "baseline.py", ec)) return "jaxbench";
  return std::nullopt;
}

std::vector<TaskFolder> find_task_folders(const fs::path& suite) {
  std::vector<TaskFolder> out;
  if (auto format = task_format(suite)) {
    out.push_back({suite.filename().string(), suite, *format});
    return out;
  }
  std::error_code ec;
  auto visible = [&](const fs::directory_entry& e) {
    const std::string name = e.path().filename().string();
    return e.is_directory(ec) && !name.starts_with(".") && name != "__pycache__";
  };
  for (const auto& entry : fs::directory_iterator(suite, ec)) {
    if (!visible(entry)) continue;
    if (auto format = task_format(entry.path())) {
      out.push_back({entry.path().filename().string(), entry.path(), *format});
      continue;
    }
    for (const auto& inner : fs::directory_iterator(entry.path(), ec)) {
      if (!visible(inner)) continue;
      if (auto format = task_format(inner.path()))
        out.push_back({entry.path().filename().string() + "/" + inner.path().filename().string(),
                       inner.path(), *format});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TaskFolder& a, const TaskFolder& b) { return a.name < b.name; });
  return out;
}

// A Pallas version shipped with the task (JAXBench's optimized.py): a second child of the root.
std::optional<fs::path> shipped_kernel(const TaskFolder& task) {
  std::error_code ec;
  for (const char* name : {"optimized.py", "candidate.py", "kernel.py"})
    if (fs::is_regular_file(task.dir / name, ec)) return task.dir / name;
  return std::nullopt;
}

struct TaskRow {
  std::string name, format;
  std::string kernel_class = "-";  // the template that wrote the first kernel, or "none"
  bool compiled = false;           // a kernel lowered, compiled and ran to a verdict
  bool correct = false;            // a kernel of the run is correct
  std::optional<double> speedup;   // best correct kernel vs XLA (none: no comparable score)
  std::string time_kind;           // "predicted" | "device"
  std::string run_id, stop_reason, failure;
  std::string unscored;  // why a correct kernel has no speedup vs XLA
  // What the compiler-basis score took beyond the full-size static profile: ops at XLA's
  // cost-model estimate (the profile gave them 0) and programs compiled with their count axes
  // cut, "XLA's ..." or "the kernel's ...": the speedup stands on the compiler, these named.
  std::vector<std::string> stand_ins;
  int evaluations = 0;
  double host_seconds = 0;
  int64_t tokens = 0;
  double usd = 0;
};

struct BenchOptions {
  std::string mode = "auto";
  std::string budget_spec;
  std::string llm = "none";
  std::string target = "v5e";
  std::string format = "text";
  json evaluate_options = json::object();
  size_t jobs = 1;
  bool use_cache = true;
  HostOptions host;
};

// Compiled: the kernel lowered for TPU, compiled and ran to a verdict (right or wrong).
bool compiled(const agents::NodeRecord& node) {
  return node.status == agents::NodeStatus::correct || node.status == agents::NodeStatus::incorrect;
}

// Why a correct node has no speedup vs XLA: the evaluator's note, else the two compiles' records
// (a kernel evaluated before XLA's compile finished gets no note), else a plain statement.
std::string unscored_reason(const agents::NodeRecord& n) {
  const json& facts = n.metrics.facts;
  if (facts.contains("unscored") && facts["unscored"].is_string())
    return facts["unscored"].get<std::string>();
  if (facts.contains("tpu_compile") && facts["tpu_compile"].is_object()) {
    const json cand = facts["tpu_compile"].value("candidate", json::object());
    const std::string status = cand.value("status", std::string());
    if (!status.empty() && status != "compiled")
      return "the TPU compiler gave no estimate for this kernel (" + status + ": " +
             cand.value("reason", std::string()) + ")";
    if (cand.contains("cycles_note") && cand["cycles_note"].is_string())
      return "the TPU compiler gave no cycles for this kernel (" +
             cand["cycles_note"].get<std::string>() + ")";
  }
  return "its score (" + (n.time_kind.empty() ? std::string("none") : n.time_kind) +
         ") is on another basis than XLA's";
}

// The ops of a node's compile record(s) whose cycles are XLA's cost-model estimate: the record
// of the reference (the XLA root) or a kernel's, whose reference record rides along.
void add_stand_ins(const json& facts, const std::string& side, std::vector<std::string>& out) {
  if (!facts.contains("tpu_compile") || !facts["tpu_compile"].is_object()) return;
  const json& tc = facts["tpu_compile"];
  const json& own = tc.contains("candidate") ? tc["candidate"] : tc;
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  if (own.is_object() && own.contains("cost_model_ops") && own["cost_model_ops"].is_object())
    for (const auto& [op, cycles] : own["cost_model_ops"].items()) add(side + " " + op);
  // Fewer cycles than moving its inputs and outputs once at HBM bandwidth: counted at that floor.
  if (own.is_object() && own.contains("hbm_floor") && own["hbm_floor"].is_object())
    add(side + " program at its inputs and outputs moved once at HBM bandwidth");
  // A program too large to profile at full size, compiled with its count axes cut and scaled.
  if (own.is_object() && own.contains("extrapolated") && own["extrapolated"].is_object())
    add(side + " program at count axes " +
        own["extrapolated"].value("count_axes", std::string("cut")) + ", scaled");
}

TaskRow optimise_task(const TaskFolder& folder, HostSession& session, agents::RunStore& runs,
                      const BenchOptions& options, const agents::Budget& budget,
                      const knowledge::TpuGeneration& target) {
  TaskRow row;
  row.name = folder.name;
  row.format = folder.format;
  fs::path anchor;
  std::string reason;
  auto task = tpu::locate_reference_task(folder.dir, false, anchor, reason);
  if (!task) {
    row.failure = reason;
    return row;
  }
  // JAXBench's harness compares at 1e-2 and accepts another output dtype; its tasks are
  // scored by its convention (docs/tasks.md).
  if (folder.format == "jaxbench") (*task)["convention"] = "jaxbench";
  service::NewSearch search;
  search.mode = options.mode;
  search.params.strategy = options.mode == "auto" ? "greedy" : "beam";
  if (options.mode == "auto") search.params.max_depth = 16;
  search.budget = budget;
  search.file = anchor;
  search.target = target.name;
  search.host = session.host->name();
  search.llm = options.llm;
  search.task = *task;
  search.start = service::SearchStart::Reference;
  search.evaluate_options = options.evaluate_options;

  service::SearchSetup setup;
  setup.use_cache = options.use_cache;
  setup.llm.llm_settings.replay_python = "python3";
  const service::GeneratedKernel generated =
      service::generate_kernel(*session.jobs, anchor, *task, target, std::nullopt);
  if (generated.ok) {
    row.kernel_class = generated.kernel_class;
    setup.from_reference.push_back(service::as_proposal(generated));
  } else {
    row.kernel_class = generated.error_kind == "no_template" ? "none" : "error";
    row.failure = generated.error;
  }
  if (auto shipped = shipped_kernel(folder)) {
    agents::Proposal given;
    given.code = read_text_file(*shipped).value_or("");
    given.strategy = "given";
    given.description =
        "the Pallas kernel shipped with the task (" + shipped->filename().string() + ")";
    setup.from_reference.push_back(std::move(given));
  }
  if (setup.from_reference.empty() && options.llm == "none") return row;
  row.run_id = service::create_search(runs, search);
  const service::SearchOutcome outcome =
      service::drive_search(runs, *session.host, session.store.get(), row.run_id,
                            read_text_file(anchor).value_or(""), std::move(setup), {}, {});
  row.stop_reason = outcome.run.stop_reason;
  const agents::RunCost& cost = outcome.run.cost;
  row.evaluations = cost.evaluations;
  row.host_seconds = cost.host_seconds;
  row.tokens = cost.tokens();
  row.usd = cost.usd;
  // The task's answer is its best correct kernel, even one that does not beat XLA. A correct
  // kernel with no score comparable with XLA's still counts as correct, with the reason.
  for (const agents::NodeRecord& n : outcome.nodes) {
    if (n.id == 0) continue;
    row.compiled = row.compiled || compiled(n);
    if (n.status != agents::NodeStatus::correct) continue;
    row.correct = true;
    if (n.speedup && (!row.speedup || *n.speedup > *row.speedup)) {
      row.speedup = n.speedup;
      row.time_kind = n.time_kind;
    } else if (!n.speedup && row.unscored.empty()) {
      row.unscored = unscored_reason(n);
    }
  }
  if (row.speedup) {
    row.unscored.clear();
    for (const agents::NodeRecord& n : outcome.nodes) {
      if (n.id == 0) add_stand_ins(n.metrics.facts, "XLA's", row.stand_ins);
      if (n.id > 0 && n.status == agents::NodeStatus::correct && n.speedup == row.speedup)
        add_stand_ins(n.metrics.facts, "the kernel's", row.stand_ins);
    }
  }
  if (!row.correct && row.failure.empty()) {
    for (const agents::NodeRecord& n : outcome.nodes)
      if (n.id > 0 && !n.error.empty()) row.failure = n.error.substr(0, 300);
    if (row.failure.empty()) row.failure = outcome.run.stop_reason;
  }
  return row;
}

std::optional<double> geomean(const std::vector<TaskRow>& rows, const std::string& kind,
                              bool static_only = false) {
  double log_sum = 0;
  int n = 0;
  for (const TaskRow& r : rows)
    if (r.correct && r.speedup && *r.speedup > 0 && r.time_kind == kind &&
        !(static_only && !r.stand_ins.empty())) {
      log_sum += std::log(*r.speedup);
      ++n;
    }
  if (n == 0) return std::nullopt;
  return std::exp(log_sum / n);
}

// fast_p: the share of tasks whose best kernel is correct and faster than p x XLA's program, on
// a basis that compares with it (the TPU compiler's estimate of both, or device time). A model
// speedup is against XLA at its ideal roofline and is not counted; fast_0 is the correct share.
double fast_p(const std::vector<TaskRow>& rows, double p) {
  if (rows.empty()) return 0;
  int n = 0;
  for (const TaskRow& r : rows) {
    if (!r.correct) continue;
    const bool comparable = r.time_kind == "compiled" || r.time_kind == "device";
    if (p <= 0 || (r.speedup && comparable && *r.speedup > p)) ++n;
  }
  return static_cast<double>(n) / static_cast<double>(rows.size());
}

std::string speedup_cell(const TaskRow& r) {
  if (!r.correct) return "-";
  if (!r.speedup) return "unscored";
  return report::format_speedup(*r.speedup) + " " + r.time_kind;
}

json to_json(const fs::path& suite, const std::string& host, const std::vector<TaskRow>& rows,
             const BenchOptions& options, double wall_s) {
  json tasks = json::array();
  std::map<std::string, std::pair<int, int>> classes;  // class -> (compiled, correct) counts
  std::map<std::string, int> class_tasks;
  for (const TaskRow& r : rows) {
    tasks.push_back({{"name", r.name},
                     {"format", r.format},
                     {"class", r.kernel_class},
                     {"compiled", r.compiled},
                     {"correct", r.correct},
                     {"speedup_vs_xla", r.speedup ? json(*r.speedup) : json()},
                     {"time_kind", r.time_kind.empty() ? json() : json(r.time_kind)},
                     {"run", r.run_id.empty() ? json() : json(r.run_id)},
                     {"stop_reason", r.stop_reason},
                     {"failure", r.failure.empty() ? json() : json(r.failure)},
                     {"unscored", r.unscored.empty() ? json() : json(r.unscored)},
                     {"beyond_full_profile", r.stand_ins},
                     {"cost",
                      {{"evaluations", r.evaluations},
                       {"host_seconds", r.host_seconds},
                       {"tokens", r.tokens},
                       {"usd", r.usd}}}});
    class_tasks[r.kernel_class] += 1;
    classes[r.kernel_class].first += r.compiled ? 1 : 0;
    classes[r.kernel_class].second += r.correct ? 1 : 0;
  }
  json per_class = json::object();
  for (const auto& [name, counts] : classes)
    per_class[name] = {
        {"tasks", class_tasks[name]}, {"compiled", counts.first}, {"correct", counts.second}};
  int compiled = 0, correct = 0;
  for (const TaskRow& r : rows) {
    compiled += r.compiled ? 1 : 0;
    correct += r.correct ? 1 : 0;
  }
  auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
  json fast = json::object();
  for (double p : {0.0, 1.0, 1.5, 2.0})
    fast["fast_" + report::format_number(p, 1)] = fast_p(rows, p);
  return {{"suite", suite.string()},
          {"host", host},
          {"mode", options.mode},
          {"llm", options.llm},
          {"evaluate_options", options.evaluate_options},
          {"tasks", tasks},
          {"summary",
           {{"tasks", rows.size()},
            {"compiled", compiled},
            {"correct", correct},
            {"per_class", per_class},
            {"geomean_speedup_predicted", optional(geomean(rows, "predicted"))},
            {"geomean_speedup_compiled", optional(geomean(rows, "compiled"))},
            {"geomean_speedup_compiled_static_only", optional(geomean(rows, "compiled", true))},
            {"geomean_speedup_measured", optional(geomean(rows, "device"))},
            {"fast_p", fast},
            {"wall_seconds", wall_s}}}};
}

void print_text(const json& out) {
  const json& s = out["summary"];
  std::cout << "maxkernel bench --optimize " << out["suite"].get<std::string>() << " on "
            << out["host"].get<std::string>() << " (" << out["mode"].get<std::string>() << ", LLM "
            << out["llm"].get<std::string>() << ")";
  if (out["evaluate_options"].contains("shrink"))
    std::cout << ", correctness on instances shrunk x" << out["evaluate_options"]["shrink"];
  std::cout << "\n\n";
  size_t width = 4;
  for (const json& t : out["tasks"]) width = std::max(width, t["name"].get<std::string>().size());
  auto pad = [](std::string text, size_t w) {
    if (text.size() < w) text.append(w - text.size(), ' ');
    return text;
  };
  std::cout << pad("task", width) << "  " << pad("class", 22) << "compiled  correct  "
            << pad("speedup vs XLA", 18) << "evals  host s  tokens  usd\n";
  for (const json& t : out["tasks"]) {
    TaskRow r;
    r.correct = t["correct"];
    if (t["speedup_vs_xla"].is_number()) r.speedup = t["speedup_vs_xla"].get<double>();
    r.time_kind = t["time_kind"].is_string() ? t["time_kind"].get<std::string>() : "";
    const json& c = t["cost"];
    std::cout << pad(t["name"], width) << "  " << pad(t["class"], 22)
              << pad(t["compiled"].get<bool>() ? "yes" : "no", 10)
              << pad(t["correct"].get<bool>() ? "yes" : "no", 9) << pad(speedup_cell(r), 18)
              << pad(std::to_string(c["evaluations"].get<int>()), 7)
              << pad(report::format_number(c["host_seconds"].get<double>(), 1), 8)
              << pad(std::to_string(c["tokens"].get<int64_t>()), 8)
              << report::format_number(c["usd"].get<double>(), 2) << "\n";
    if (t["failure"].is_string() && !t["correct"].get<bool>())
      std::cout << pad("", width) << "  -> " << t["failure"].get<std::string>() << "\n";
    else if (t["unscored"].is_string())
      std::cout << pad("", width) << "  -> " << t["unscored"].get<std::string>() << "\n";
    if (t.contains("beyond_full_profile") && !t["beyond_full_profile"].empty()) {
      std::string ops;
      for (const json& op : t["beyond_full_profile"])
        ops += (ops.empty() ? "" : ", ") + op.get<std::string>();
      std::cout << pad("", width) << "  -> beyond the full-size static profile: " << ops << "\n";
    }
  }
  const int tasks = s["tasks"].get<int>();
  std::cout << "\ncompiled " << s["compiled"] << "/" << tasks << ", correct " << s["correct"] << "/"
            << tasks << "\nper class:";
  for (const auto& [name, c] : s["per_class"].items())
    std::cout << "  " << name << " " << c["correct"] << "/" << c["tasks"] << " correct";
  auto number = [](const json& v) {
    return v.is_number() ? report::format_speedup(v.get<double>()) : std::string("n/a");
  };
  std::cout << "\ngeomean speedup vs XLA: predicted (TPU compiler) "
            << number(s["geomean_speedup_compiled"]) << " (static profile alone "
            << number(s["geomean_speedup_compiled_static_only"]) << "), predicted (model) "
            << number(s["geomean_speedup_predicted"]) << ", measured (device) "
            << number(s["geomean_speedup_measured"]) << "\nfast_p:";
  for (const auto& [name, v] : s["fast_p"].items())
    std::cout << "  " << name << " " << report::format_number(v.get<double>(), 3);
  std::cout << "\nwall " << report::format_number(s["wall_seconds"].get<double>(), 1) << " s\n";
}

}  // namespace

int run_bench_optimize(const std::vector<std::string>& args) {
  BenchOptions options;
  options.host.timeout_s = 600;
  std::string suite_arg;
  if (auto status = read_arguments(
          args, "bench", kBenchOptimizeUsage,
          [&](ArgumentReader& r) {
            if (take_host_option(r, options.host, &options.use_cache)) return true;
            if (r.is("--optimize"))
              return true;
            else if (r.is("--mode"))
              options.mode = r.value();
            else if (r.is("--budget"))
              options.budget_spec = r.value();
            else if (r.is("--llm"))
              options.llm = r.value();
            else if (r.is("--target"))
              options.target = r.value();
            else if (r.is("--format"))
              options.format = r.value();
            else if (r.is("--shrink"))
              options.evaluate_options["shrink"] = service::shrink_option(std::stoi(r.value()));
            else if (r.is("--jobs"))
              options.jobs = static_cast<size_t>(r.positive_integer());
            else
              return false;
            return true;
          },
          SinglePositional{&suite_arg, "one SUITE_DIR at a time"}))
    return *status;
  if (suite_arg.empty() || (options.mode != "auto" && options.mode != "graph") ||
      (options.format != "text" && options.format != "json")) {
    std::cerr << "maxkernel bench: give a SUITE_DIR, --mode auto|graph, --format text|json\n"
              << kBenchOptimizeUsage;
    return 2;
  }
  const agents::Budget defaults =
      service::default_budget(service::BudgetFront::Bench, options.mode);
  agents::Budget budget;
  try {
    budget = agents::Budget::parse(options.budget_spec, defaults);
  } catch (const std::exception& e) {
    std::cerr << "maxkernel bench: " << e.what() << "\n";
    return 2;
  }
  const knowledge::TpuGeneration* target = knowledge::find_tpu_generation(options.target);
  if (!target) {
    std::cerr << "maxkernel bench: unknown TPU generation '" << options.target << "'\n";
    return 2;
  }
  const fs::path suite = fs::absolute(suite_arg);
  const std::vector<TaskFolder> folders = find_task_folders(suite);
  if (folders.empty()) {
    std::cerr << "maxkernel bench: no tasks in " << suite.string()
              << " (folders with kernel_task.yaml or baseline.py)\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  auto opened = open_search_session(options.host, "bench");
  if (!opened) return 2;
  HostSession* session = opened->hosts.get();
  agents::RunStore* runs = opened->runs.get();
  if (std::any_of(folders.begin(), folders.end(),
                  [](const TaskFolder& f) { return f.format == "jaxbench"; }))
    std::cerr << "maxkernel bench: JAXBench tasks are scored by JAXBench's convention (tolerance "
                 "1e-2 where the task sets none, another output dtype compared in float32; "
                 "docs/tasks.md)\n";
  std::vector<TaskRow> rows(folders.size());
  std::atomic<size_t> next{0};
  std::mutex print_mutex;
  size_t finished = 0;
  const auto started = std::chrono::steady_clock::now();
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto work = [&] {
    for (size_t k; (k = next++) < folders.size();) {
      try {
        rows[k] = optimise_task(folders[k], *session, *runs, options, budget, *target);
      } catch (const std::exception& e) {
        rows[k].name = folders[k].name;
        rows[k].format = folders[k].format;
        rows[k].failure = std::string("stopped: ") + e.what();
      }
      std::lock_guard lock(print_mutex);
      const TaskRow& r = rows[k];
      ++finished;
      const int filled = static_cast<int>(20 * finished / folders.size());
      std::cerr << (tty ? "\r\033[K" : "") << "[" << std::string(filled, '#')
                << std::string(20 - filled, '.') << "] " << finished << "/" << folders.size() << " "
                << r.name << ": " << r.kernel_class << ", "
                << (r.correct ? "correct " + speedup_cell(r) : std::string("not correct")) << " ("
                << r.evaluations << " evaluations)" << (tty ? "" : "\n") << std::flush;
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(options.jobs, folders.size()); ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (tty) std::cerr << "\n";
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const json out = to_json(suite, session->host->name(), rows, options, wall);
  if (options.format == "json")
    std::cout << out.dump(2) << "\n";
  else
    print_text(out);
  return 0;
}

}  // namespace mk::cli
