// maxkernel: the command-line front end. Subcommands drive the engine directly, without an editor.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>

#include <string>
#include <vector>

#include "cli/bench_command.h"
#include "cli/check_command.h"
#include "cli/kernel_commands.h"
#include "cli/knowledge_command.h"
#include "cli/optimize_command.h"
#include "cli/report_command.h"

namespace {

constexpr const char* kMainUsage =
    "usage: maxkernel <command> [options]\n"
    "commands:\n"
    "  check     static checks of Pallas kernels (text, JSON or SARIF)\n"
    "  lower     lower a kernel for TPU on a host; exact pallas_call facts or mapped errors\n"
    "  test      check a kernel against its task's frozen reference and time it\n"
    "  profile   profile a kernel on a host\n"
    "  optimize  Auto loop or graph search over kernel variants; prints a table, writes a report\n"
    "  runs      list, show or resume optimisation runs\n"
    "  report    write a run's self-contained HTML report (graph, progress, diffs, cost)\n"
    "  bench     evaluate a JAXBench-format suite: correctness, speedup vs XLA, fast_p\n"
    "  knowledge add documents to the knowledge store, search it, list lessons\n"
    "  version   print the version\n"
    "run `maxkernel <command> --help` for a command's options\n";

}  // namespace

int main(int argc, char** argv) {
  // stdout carries the command's output (text, JSON, SARIF); logs go to stderr.
  // NO_COLOR (no-color.org): any non-empty value turns colour off.
  const char* no_color = std::getenv("NO_COLOR");
  spdlog::set_default_logger(no_color && *no_color ? spdlog::stderr_logger_mt("maxkernel")
                                                   : spdlog::stderr_color_mt("maxkernel"));
  if (const char* level = std::getenv("MAXKERNEL_LOG_LEVEL"))
    spdlog::set_level(spdlog::level::from_str(level));

  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kMainUsage;  // a usage error: stdout stays for output
    return 2;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kMainUsage;
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "check") return mk::cli::run_check(args);
  if (command == "lower" || command == "test" || command == "profile")
    return mk::cli::run_kernel_command(command, args);
  if (command == "optimize") return mk::cli::run_optimize(args);
  if (command == "runs") return mk::cli::run_runs(args);
  if (command == "report") return mk::cli::run_report(args);
  if (command == "bench") return mk::cli::run_bench(args);
  if (command == "knowledge") return mk::cli::run_knowledge(args);
  if (command == "version" || command == "--version") {
    std::cout << "maxkernel 0.1.0\n";
    return 0;
  }
  std::cerr << "maxkernel: unknown command '" << command << "'\n" << kMainUsage;
  return 2;
}
