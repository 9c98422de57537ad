#include "cli/report_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "agents/orchestration/run_store.h"
#include "agents/report/html.h"
#include "agents/report/report_html.h"
#include "cli/argument_reader.h"
#include "knowledge/store.h"

namespace mk::cli {

namespace {

constexpr const char* kReportUsage =
    "usage: maxkernel report RUN_ID [-o FILE] [--store PATH]\n"
    "       maxkernel report --latest [-o FILE] [--store PATH]\n"
    "       maxkernel report --list [--store PATH]\n"
    "  -o, --output FILE  where to write the HTML page (default ./maxkernel-report-RUN_ID.html)\n"
    "  --store PATH       the store holding the runs (default: $MAXKERNEL_STORE, else\n"
    "                     ~/.cache/maxkernel/store.sqlite)\n"
    "  --latest           the newest run in the store\n"
    "  --list             list the newest runs instead of writing a report\n"
    "Writes one self-contained HTML file (no scripts, no external resources) and prints its\n"
    "path. Exit status: 0 written, 1 no such run / cannot write, 2 bad usage.\n";

// The run id as a file name part: anything but [A-Za-z0-9._-] becomes '_'.
std::string file_name_safe(const std::string& id) {
  std::string out = id;
  for (char& c : out) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return out;
}

int usage_error(const std::string& message) {
  std::cerr << "maxkernel report: " << message << "\n" << kReportUsage;
  return 2;
}

}  // namespace

int run_report(const std::vector<std::string>& args) {
  std::string run_id, output, store_path;
  bool latest = false, list = false;
  if (auto status = read_arguments(
          args, "report", kReportUsage,
          [&](ArgumentReader& r) {
            if (r.is("-o") || r.is("--output"))
              output = r.value();
            else if (r.is("--store"))
              store_path = r.value();
            else if (r.is("--latest"))
              latest = true;
            else if (r.is("--list"))
              list = true;
            else
              return false;
            return true;
          },
          SinglePositional{&run_id, "one RUN_ID at a time"}))
    return *status;
  if (!list && run_id.empty() == !latest)
    return usage_error(latest ? "give a RUN_ID or --latest, not both"
                              : "give a RUN_ID or --latest");

  const std::filesystem::path store_file =
      store_path.empty() ? knowledge::default_store_path() : std::filesystem::path(store_path);
  std::error_code ec;
  // Opening would create an empty database: a report never writes a store into existence.
  if (!std::filesystem::is_regular_file(store_file, ec)) {
    std::cerr << "maxkernel report: no run store at " << store_file.string()
              << " (run a search first, or pass --store PATH)\n";
    return 1;
  }
  std::unique_ptr<agents::RunStore> store;
  try {
    store = std::make_unique<agents::RunStore>(store_file);
  } catch (const std::exception& e) {
    std::cerr << "maxkernel report: " << e.what() << "\n";
    return 1;
  }

  if (list) {
    const auto runs = store->runs(20);
    if (runs.empty()) std::cout << "no runs in " << store_file.string() << "\n";
    for (const auto& run : runs) {
      std::cout << run.id << "  " << report::format_utc(run.created_at) << "  "
                << to_string(run.status) << "  " << run.mode << "/" << run.strategy << "  "
                << run.file << "\n";
    }
    return 0;
  }

  std::optional<agents::RunRecord> run;
  if (latest) {
    const auto runs = store->runs(1);
    if (runs.empty()) {
      std::cerr << "maxkernel report: no runs in " << store_file.string() << "\n";
      return 1;
    }
    run = runs.front();
  } else {
    run = store->run(run_id);
    if (!run) {
      std::cerr << "maxkernel report: no run '" << run_id << "' in " << store_file.string();
      const auto recent = store->runs(5);
      if (!recent.empty()) {
        std::cerr << "; newest runs:";
        for (const auto& r : recent) std::cerr << " " << r.id;
      }
      std::cerr << " (see maxkernel report --list)\n";
      return 1;
    }
  }

  const std::string html = report::render_report(*run, store->nodes(run->id));
  const std::filesystem::path out_path = std::filesystem::absolute(
      output.empty()
          ? std::filesystem::path("maxkernel-report-" + file_name_safe(run->id) + ".html")
          : std::filesystem::path(output));
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(html.data(), static_cast<std::streamsize>(html.size())) || !out.flush()) {
    std::cerr << "maxkernel report: cannot write " << out_path.string() << "\n";
    return 1;
  }
  std::cout << out_path.string() << "\n";
  return 0;
}

}  // namespace mk::cli
