#include "cli/optimize_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "agents/orchestration/expander_factory.h"
#include "agents/orchestration/graph_search.h"
#include "agents/orchestration/run_lessons.h"
#include "agents/orchestration/run_store.h"
#include "agents/orchestration/selection.h"
#include "agents/report/html.h"
#include "cli/argument_reader.h"
#include "cli/host_session.h"
#include "cli/run_output.h"
#include "cli/source_file.h"
#include "service/budget_defaults.h"
#include "service/generation.h"
#include "service/hosts.h"
#include "service/searches.h"

namespace mk::cli {

using nlohmann::json;

namespace {

constexpr const char* kOptimizeUsage =
    "usage: maxkernel optimize FILE[::KERNEL] | TASK [options]\n"
    "  FILE holds a pallas_call; TASK is a reference with no kernel (a folder with\n"
    "  kernel_task.yaml or baseline.py, or a file defining reference + make_inputs):\n"
    "  the run starts from XLA (speedup 1.0) and writes the first kernel itself\n"
    "  --mode auto|graph        Auto loop (greedy, default) or graph search\n"
    "  --search beam|parallel|ucb   graph search strategy (default beam)\n"
    "  --beam N --branches N --depth N --keep F --concurrency N   search shape\n"
    "  --roofline F             stop once the best kernel reaches F of the roofline\n"
    "                           (default 0.9; 0 = never)\n"
    "  --no-diagnosis           expand in the plain order, not the one the diagnosis picks\n"
    "  --budget SPEC            iterations=8,evaluations=40,seconds=600,tokens=N,usd=X,\n"
    "                           patience=3,target=1.5 (any subset)\n"
    "  --llm SPEC               none (default: autotuner + rule-based rewrites), replay:FILE,\n"
    "                           openai:MODEL[@BASE_URL], gemini:MODEL, anthropic:MODEL\n"
    "  --record-llm FILE        write every LLM exchange (keys redacted) as a replay fixture\n"
    "  --host NAME --hosts FILE --python PATH --timeout S   where kernels run (default local);\n"
    "                           --host a,b (or --host a --host b) spreads the work over hosts\n"
    "  --target GEN             TPU generation the predictions are for (default v5e)\n"
    "  --store PATH             knowledge store holding runs and the evaluation cache\n"
    "  --report PATH            write the HTML report there (default maxkernel-report-RUN.html)\n"
    "  --shrink F               check correctness on the task shrunk by F in every large dim (a\n"
    "                           CPU host's interpret mode cannot run production sizes; lowering\n"
    "                           and predictions stay at full size; docs/tasks.md)\n"
    "  --extra-shapes rules|none  check every candidate at extra input shapes derived from the\n"
    "                           kernel's blocks (a ragged last block, a single block; default\n"
    "                           rules) or only at the task's own (docs/optimize.md)\n"
    "  --tester-shapes N        with --llm: add up to N shapes the Tester proposes (default 0)\n"
    "  --autotune-configs N     each round, tune the best kernel over up to N configurations\n"
    "                           of its block sizes in one worker call, cached per kernel,\n"
    "                           shapes and device (0: no phase; default: 8 on a TPU or GPU\n"
    "                           host, none on a CPU host)\n"
    "  --out PATH               where the best kernel of a TASK run is written (default beside\n"
    "                           the task, never over an existing file)\n"
    "  --no-report --no-cache --format text|json\n";

constexpr const char* kRunsUsage =
    "usage: maxkernel runs list [--store PATH] [--format text|json]\n"
    "       maxkernel runs show RUN [--store PATH] [--format text|json]\n"
    "       maxkernel runs resume RUN [--host NAME[,NAME...] --hosts FILE --python PATH --store "
    "PATH]\n";

std::atomic<bool> interrupted{false};

void on_interrupt(int) {
  interrupted = true;
}

struct OptimizeOptions {
  std::string target_spec;
  std::string mode = "auto";
  std::string search = "beam";
  std::string llm = "none";
  std::string budget_spec;
  std::string target = "v5e";
  std::string report_path;
  bool report = true;
  bool use_cache = true;
  std::string format = "text";
  std::string record_llm;    // --record-llm FILE: write every LLM exchange as a fixture
  std::string kernel_class;  // for lessons ("matmul", ...): from the source model
  std::string kernel_out;    // --out: where the best kernel of a reference-start run goes
  json evaluate_options = json::object();  // --shrink F: correctness on a smaller instance
  agents::ExtraShapesChoice extra_shapes;  // --extra-shapes, --tester-shapes
  std::string extra_shapes_mode = "rules";
  HostOptions host;
  agents::SearchParams params = [] {
    agents::SearchParams p;
    p.autotune_configs = agents::SearchParams::kAutotuneAutomatic;  // --autotune-configs
    return p;
  }();
};

// Prints one progress line per event: a bar on a terminal, plain lines in a log.
class ProgressPrinter {
 public:
  void operator()(const agents::SearchProgress& p) {
    const bool tty = isatty(STDERR_FILENO) != 0;
    char head[160];
    std::snprintf(head, sizeof head, "[iteration %d%s] %d evaluations, best %.2fx %s", p.round,
                  p.max_rounds > 0 ? ("/" + std::to_string(p.max_rounds)).c_str() : "",
                  p.evaluations, p.best_speedup, p.score_label.c_str());
    std::cerr << (tty ? "\r\033[K" : "") << head << " | " << p.message << (tty ? "" : "\n")
              << std::flush;
    dirty_ = tty;
  }
  ~ProgressPrinter() {
    if (dirty_) std::cerr << "\n";
  }

 private:
  bool dirty_ = false;
};

// Where the best kernel of a run that started from a reference is written: beside the task,
// never over an existing file (the user's code is never replaced unasked).
std::filesystem::path kernel_output_path(const std::filesystem::path& anchor,
                                         const std::string& requested) {
  if (!requested.empty()) return requested;
  const std::filesystem::path dir = anchor.parent_path();
  const std::string stem = anchor.stem().string() + "_pallas";
  std::filesystem::path path = dir / (stem + ".py");
  for (int n = 2; std::filesystem::exists(path); ++n)
    path = dir / (stem + "_" + std::to_string(n) + ".py");
  return path;
}

// The kernels that grow from a reference root: the generator's, when a template covers it.
// Without an LLM a reference no template covers ends the command with the generator's reason.
bool kernels_from_reference(HostSession& session, const agents::RunRecord& run,
                            const std::string& llm, service::SearchSetup& setup) {
  const knowledge::TpuGeneration* generation = knowledge::find_tpu_generation(run.target);
  if (!generation) return false;
  std::optional<std::string> entry;
  if (!run.kernel.empty()) entry = run.kernel;
  std::cerr << "writing a kernel from the reference (templates"
            << (llm == "none" ? ", no LLM" : "; then the LLM " + llm) << ")...\n";
  const service::GeneratedKernel kernel =
      service::generate_kernel(*session.jobs, run.file, run.task, *generation, entry);
  if (kernel.ok) {
    std::cerr << "generated: " << kernel.kernel_class << ": " << kernel.description << "\n";
    setup.from_reference.push_back(service::as_proposal(kernel));
    return true;
  }
  if (llm == "none") {
    std::cerr << "maxkernel optimize: " << kernel.error << "\n";
    return false;
  }
  // An LLM can still write it from the reference.
  std::cerr << "templates: " << kernel.error << "; the LLM writes it from the reference\n";
  return true;
}

// Runs (or resumes) the search of `run_id` and prints the outcome. Returns the exit code.
int drive_run(agents::RunStore& runs, HostSession& session, const std::string& run_id,
              const std::string& baseline_code, const OptimizeOptions& options) {
  auto run = runs.run(run_id);
  service::SearchSetup setup;
  setup.llm.llm_settings.replay_python = "python3";  // the replay server needs only stdlib
  setup.llm.llm_settings.record_path = options.record_llm;
  setup.use_cache = options.use_cache;
  setup.kernel_class = options.kernel_class;
  const bool from_reference = service::starts_from_reference(*run);
  if (from_reference && !kernels_from_reference(session, *run, run->llm, setup)) {
    run->status = agents::RunStatus::failed;
    run->stop_reason = "no kernel could be written from the reference";
    runs.update_run(*run);
    return 1;
  }

  interrupted = false;
  auto previous = std::signal(SIGINT, on_interrupt);
  service::SearchOutcome outcome;
  {
    ProgressPrinter printer;
    try {
      outcome = service::drive_search(
          runs, *session.host, session.store.get(), run_id, baseline_code, std::move(setup),
          [&](const agents::SearchProgress& p) { printer(p); }, [] { return interrupted.load(); });
    } catch (const std::exception& e) {
      // A setup error, or a store write failed (disk full, read-only): what was written stays
      // consistent.
      std::signal(SIGINT, previous);
      std::cerr << "maxkernel: run " << run_id << " stopped: " << e.what()
                << "\nresume with: maxkernel runs resume " << run_id << "\n";
      return 1;
    }
  }
  std::signal(SIGINT, previous);
  if (!outcome.warning.empty()) std::cerr << "maxkernel: " << outcome.warning << "\n";
  // A run from a reference hands back a kernel even when none beats XLA: the best correct one.
  // It is written first and recorded with the run, so the report names it.
  agents::RunRecord final_run = outcome.run;
  const std::vector<agents::NodeRecord>& nodes = outcome.nodes;
  std::string kernel_file;
  const agents::NodeRecord* best_kernel = nullptr;
  for (const agents::NodeRecord& n : nodes)
    if (from_reference && n.id > 0 && n.status == agents::NodeStatus::correct && n.speedup &&
        (!best_kernel || *n.speedup > *best_kernel->speedup))
      best_kernel = &n;
  if (best_kernel) {
    const std::filesystem::path path = kernel_output_path(final_run.file, options.kernel_out);
    std::ofstream out(path);
    out << best_kernel->code;
    if (out) {
      kernel_file = path.string();
      final_run.params.kernel_written = std::filesystem::absolute(path).string();
      final_run.params.kernel_written_node = best_kernel->id;
      runs.update_run(final_run);
    } else {
      std::cerr << "maxkernel: cannot write the kernel to " << path.string() << "\n";
    }
  }

  std::string report_file;
  if (options.report) {
    report_file =
        options.report_path.empty() ? "maxkernel-report-" + run_id + ".html" : options.report_path;
    std::string error;
    if (!write_run_report(final_run, nodes, report_file, error)) {
      std::cerr << "maxkernel: report not written: " << error << "\n";
      report_file.clear();
    }
  }
  if (options.format == "json") {
    json out = run_json(final_run, nodes, report_file);
    if (!kernel_file.empty()) {
      out["kernel_file"] = kernel_file;
      out["kernel_node"] = best_kernel->id;
    }
    out["extra_shapes"] = service::extra_shapes_json(final_run, nodes);
    std::cout << out.dump(2) << "\n";
  } else {
    print_run_summary(std::cout, final_run, nodes, report_file);
    if (const std::string shapes = service::extra_shapes_summary(final_run, nodes); !shapes.empty())
      std::cout << shapes << "\n";
    if (!kernel_file.empty())
      std::cout << "kernel: " << kernel_file << " (node " << best_kernel->id << ", "
                << report::format_speedup(*best_kernel->speedup) << " vs XLA, "
                << final_run.score_kind << ")\n";
    else if (from_reference)
      std::cout << "kernel: none correct (every kernel written from the reference failed)\n";
  }
  if (final_run.status == agents::RunStatus::cancelled) {
    std::cerr << "stopped; resume with: maxkernel runs resume " << run_id << "\n";
    return 130;
  }
  return final_run.status == agents::RunStatus::failed ? 1 : 0;
}

// Nullopt when the options are complete and valid, else the exit status (0 after --help).
std::optional<int> parse_optimize_args(const std::vector<std::string>& args, OptimizeOptions& o) {
  bool depth_given = false;
  if (auto status = read_arguments(
          args, "optimize", kOptimizeUsage,
          [&](ArgumentReader& r) {
            if (take_host_option(r, o.host, &o.use_cache)) return true;
            if (r.take("--mode", o.mode) || r.take("--search", o.search) ||
                r.take("--llm", o.llm) || r.take("--budget", o.budget_spec) ||
                r.take("--target", o.target) || r.take("--report", o.report_path) ||
                r.take("--out", o.kernel_out) || r.take("--extra-shapes", o.extra_shapes_mode) ||
                r.take("--format", o.format))
              return true;
            if (r.is("--no-report"))
              o.report = false;
            else if (r.is("--shrink"))
              o.evaluate_options["shrink"] = service::shrink_option(std::stoi(r.value()));
            else if (r.is("--tester-shapes"))
              o.extra_shapes.tester = r.whole_number();
            else if (r.is("--beam"))
              o.params.beam_size = std::stoul(r.value());
            else if (r.is("--branches"))
              o.params.branches = std::stoul(r.value());
            else if (r.is("--depth")) {
              o.params.max_depth = std::stoi(r.value());
              depth_given = true;
            } else if (r.is("--keep"))
              o.params.keep_factor = r.number();
            else if (r.is("--concurrency"))
              o.params.concurrency = std::stoul(r.value());
            else if (r.is("--roofline"))
              o.params.roofline_stop = r.number();
            else if (r.is("--no-diagnosis"))
              o.params.diagnosis = false;
            else if (r.is("--autotune-configs"))
              o.params.autotune_configs = r.whole_number();
            else
              return false;
            return true;
          },
          SinglePositional{&o.target_spec, "one FILE[::KERNEL] at a time"}))
    return status;
  auto usage_error = [](const std::string& why) {
    std::cerr << "maxkernel optimize: " << why << "\n" << kOptimizeUsage;
    return 2;
  };
  if (o.target_spec.empty()) return usage_error("FILE is required");
  if (o.mode != "auto" && o.mode != "graph") return usage_error("--mode is auto or graph");
  if (o.search != "beam" && o.search != "parallel" && o.search != "ucb")
    return usage_error("--search is beam, parallel or ucb");
  if (o.format != "text" && o.format != "json") return usage_error("--format is text or json");
  if (o.extra_shapes_mode != "rules" && o.extra_shapes_mode != "none")
    return usage_error("--extra-shapes is rules or none");
  o.extra_shapes.rules = o.extra_shapes_mode == "rules";
  if (o.params.branches == 0 || o.params.beam_size == 0 || o.params.concurrency == 0)
    return usage_error("--beam, --branches and --concurrency must be positive");
  o.params.strategy = o.mode == "auto" ? "greedy" : o.search;
  if (o.mode == "auto" && !depth_given) o.params.max_depth = 16;
  return std::nullopt;
}

}  // namespace

int run_optimize(const std::vector<std::string>& args) {
  OptimizeOptions options;
  if (auto status = parse_optimize_args(args, options)) return *status;
  std::string error;
  const agents::Budget defaults =
      service::default_budget(service::BudgetFront::Optimize, options.mode);
  agents::Budget budget;
  try {
    budget = agents::Budget::parse(options.budget_spec, defaults);
  } catch (const std::exception& e) {
    std::cerr << "maxkernel optimize: " << e.what() << "\n";
    return 2;
  }
  const knowledge::TpuGeneration* generation = knowledge::find_tpu_generation(options.target);
  if (!generation) {
    std::cerr << "maxkernel optimize: unknown TPU generation '" << options.target
              << "' (known: " << knowledge::known_generation_names() << ")\n";
    return 2;
  }
  const size_t sep = options.target_spec.find("::");
  const std::filesystem::path file = std::filesystem::absolute(options.target_spec.substr(0, sep));
  const std::string kernel = sep == std::string::npos ? "" : options.target_spec.substr(sep + 2);
  service::NewSearch search;
  std::string baseline_code;
  std::optional<json> task;
  if (std::filesystem::is_directory(file) || file.filename() == "kernel_task.yaml" ||
      file.filename() == "baseline.py") {
    search.start = service::SearchStart::Reference;
  } else {
    AnalysedFile analysed = analyse_file(file, *generation);
    if (!analysed.read_error.empty()) {
      std::cerr << "maxkernel optimize: " << analysed.read_error << "\n";
      return 2;
    }
    if (analysed.analysis.model.kernels.empty()) {
      // No kernel yet: a file that defines its task starts from its reference.
      search.start = service::SearchStart::Reference;
      std::filesystem::path anchor;
      task = tpu::locate_reference_task(file, analysed.analysis.model.task.form() == "infile",
                                        anchor, error);
      if (!task) {
        std::cerr << "maxkernel optimize: " << error << "\n";
        return 2;
      }
    } else {
      const pallas::Kernel* chosen = &analysed.analysis.model.kernels.front();
      for (const pallas::Kernel& k : analysed.analysis.model.kernels)
        if (!kernel.empty() && (k.name == kernel || k.enclosing_function == kernel)) chosen = &k;
      options.kernel_class = agents::kernel_class_of(*chosen, file.stem().string());
      task = tpu::locate_task(file, analysed.analysis.model.task.form() == "infile", error);
      if (!task) {
        std::cerr << "maxkernel optimize: " << error << "\n";
        return 2;
      }
      search.file = file;
      baseline_code = analysed.text;
    }
  }
  if (search.start == service::SearchStart::Reference) {
    std::filesystem::path anchor;
    task = tpu::locate_reference_task(file, true, anchor, error);
    if (!task) {
      std::cerr << "maxkernel optimize: " << error << "\n";
      return 2;
    }
    search.file = anchor;
    baseline_code =
        read_text_file(anchor).value_or("");  // the root's code: the reference, for the report
  }
  std::signal(SIGPIPE, SIG_IGN);
  auto opened = open_search_session(options.host, "optimize");
  if (!opened) return 2;
  HostSession* session = opened->hosts.get();
  agents::RunStore* runs = opened->runs.get();
  search.mode = options.mode;
  search.params = options.params;
  search.budget = budget;
  search.kernel = kernel;
  search.target = generation->name;
  search.host = session->host->name();
  search.llm = options.llm;
  search.task = *task;
  search.evaluate_options = options.evaluate_options;
  if (options.extra_shapes.rules || options.extra_shapes.tester > 0)
    search.extra_shapes = options.extra_shapes;
  else
    search.extra_shapes.reset();
  const std::string run_id = service::create_search(*runs, search);
  std::cerr << "run " << run_id << ": " << options.mode << " (" << options.params.strategy
            << ") on " << file.filename().string()
            << (search.start == service::SearchStart::Reference ? " from its reference" : "")
            << ", host " << session->host->name() << ", "
            << (options.llm == "none" ? std::string("no LLM") : "LLM " + options.llm) << "\n";
  return drive_run(*runs, *session, run_id, baseline_code, options);
}

int run_runs(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << kRunsUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string verb = args[0];
  OptimizeOptions options;
  std::string run_id;
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (auto status = read_arguments(
          rest, "runs", kRunsUsage,
          [&](ArgumentReader& r) {
            if (take_host_option(r, options.host, &options.use_cache)) return true;
            if (r.is("--format"))
              options.format = r.value();
            else if (r.is("--report"))
              options.report_path = r.value();
            else if (r.is("--no-report"))
              options.report = false;
            else
              return false;
            return true;
          },
          SinglePositional{&run_id, "one RUN_ID at a time"}))
    return *status;
  std::unique_ptr<agents::RunStore> runs;
  try {
    runs = std::make_unique<agents::RunStore>(store_path_of(options.host));
  } catch (const std::exception& e) {
    std::cerr << "maxkernel runs: " << e.what() << "\n";
    return 2;
  }
  if (verb == "list") {
    print_run_list(std::cout, runs->runs(50), options.format == "json");
    return 0;
  }
  if (run_id.empty()) {
    std::cerr << kRunsUsage;
    return 2;
  }
  auto run = runs->run(run_id);
  if (!run) {
    std::cerr << "maxkernel runs: no run '" << run_id << "' in "
              << store_path_of(options.host).string() << "\n";
    return 1;
  }
  if (verb == "show") {
    const auto nodes = runs->nodes(run_id);
    if (options.format == "json")
      std::cout << run_json(*run, nodes, "").dump(2) << "\n";
    else
      print_run_summary(std::cout, *run, nodes, "");
    return 0;
  }
  if (verb != "resume") {
    std::cerr << "maxkernel runs: unknown verb '" << verb << "'\n" << kRunsUsage;
    return 2;
  }
  if (run->status == agents::RunStatus::done || run->status == agents::RunStatus::failed) {
    std::cerr << "maxkernel runs: run " << run_id << " is " << to_string(run->status) << " ("
              << run->stop_reason << "); nothing to resume\n";
    return 1;
  }
  std::string error;
  // A resumed run goes back to the hosts it was started on unless others are named.
  if (options.host.host_names.empty() && !run->host.empty() &&
      !service::add_host_names(run->host, options.host.host_names, error)) {
    std::cerr << "maxkernel runs resume: run " << run_id << ": " << error << "\n";
    return 2;
  }
  auto session = open_host_session(options.host, error);
  if (!session) {
    std::cerr << "maxkernel runs resume: " << error << "\n";
    return 2;
  }
  std::cerr << "run " << run_id << ": resuming (" << runs->nodes(run_id).size()
            << " nodes recorded)\n";
  return drive_run(*runs, *session, run_id, "", options);
}

}  // namespace mk::cli
