#include "cli/check_command.h"

#include <spdlog/spdlog.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "cli/argument_reader.h"
#include "cli/check_settings.h"
#include "cli/github_annotations.h"
#include "cli/inline_ignores.h"
#include "cli/sarif.h"
#include "cli/source_file.h"
#include "source/analysis/describe.h"
#include "source/analysis/doc_links.h"
#include "source/analysis/vmem.h"

namespace mk::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckUsage =
    "usage: maxkernel check [options] PATH...\n"
    "  Statically checks the Pallas kernels in Python files (folders are searched for *.py;\n"
    "  - reads stdin).\n"
    "  --target GEN            TPU generation (default v5e)\n"
    "  --format FORMAT         text (default), json, sarif or github (workflow annotations)\n"
    "  --select CODES          report only these codes or prefixes (MK001,MK007 or MK00)\n"
    "  --ignore CODES          never report these\n"
    "  --stdin-filename PATH   the name stdin's text is reported under, and looked up from\n"
    "  --sarif-root DIR        SARIF URIs are relative to DIR (default the git root)\n"
    "  -q, --quiet             findings only: no summary, no warnings\n"
    "  -v, --verbose           name each file as it is checked\n"
    "  Settings (target, select, ignore) also come from [tool.maxkernel] in the nearest\n"
    "  pyproject.toml; the command line wins. `# maxkernel: ignore[MK001]` on a line silences\n"
    "  that code there. Exit status: 0 no errors, 1 errors found, 2 bad usage or unreadable "
    "input.\n";

nlohmann::json kernel_json(const AnalysedFile& f, const pallas::Kernel& k) {
  const auto pos = f.position(k.call_span.start);
  nlohmann::json j{{"name", k.name},
                   {"line", pos.line + 1},
                   {"backend", pallas::to_string(k.backend)},
                   {"summary", analysis::kernel_summary(k)},
                   {"num_scalar_prefetch", k.num_scalar_prefetch},
                   {"unknowns", k.unknowns}};
  if (k.grid.rank) {
    nlohmann::json grid = nlohmann::json::array();
    for (const auto& e : k.grid.extents) grid.push_back(e ? nlohmann::json(*e) : nlohmann::json());
    j["grid"] = grid;
  }
  if (k.dimension_semantics) j["dimension_semantics"] = *k.dimension_semantics;
  const auto vmem = analysis::estimate_vmem(k);
  j["vmem_bytes_per_step"] = {{"known", vmem.known_bytes}, {"complete", vmem.complete}};
  return j;
}

}  // namespace

int run_check(const std::vector<std::string>& args) {
  CheckSettings command_line;
  std::string format = "text";
  std::string stdin_filename;
  std::string sarif_root;
  bool quiet = false, verbose = false;
  std::vector<std::string> paths;
  if (auto status = read_arguments(args, "check", kCheckUsage, [&](ArgumentReader& r) {
        std::string error;
        if (r.is("--target")) {
          command_line.target = r.value();
        } else if (r.is("--select") || r.is("--ignore")) {
          const bool select = r.is("--select");
          std::vector<std::string> codes;
          if (!parse_code_list(r.value(), codes, error))
            throw std::invalid_argument(r.current() + ": " + error);
          (select ? command_line.select : command_line.ignore) = codes;
        } else if (r.take("--format", format) || r.take("--stdin-filename", stdin_filename) ||
                   r.take("--sarif-root", sarif_root)) {
        } else if (r.is("-q") || r.is("--quiet")) {
          quiet = true;
        } else if (r.is("-v") || r.is("--verbose")) {
          verbose = true;
        } else if (!r.is_option()) {
          paths.push_back(r.current());
        } else {
          return false;
        }
        return true;
      }))
    return *status;
  if (format != "text" && format != "json" && format != "sarif" && format != "github") {
    std::cerr << "maxkernel check: unknown format '" << format
              << "' (text, json, sarif or github)\n";
    return 2;
  }
  if (paths.empty()) {
    std::cerr << "maxkernel check: no PATH given (- reads stdin)\n" << kCheckUsage;
    return 2;
  }
  if (verbose) spdlog::set_level(spdlog::level::debug);

  // Settings: the nearest pyproject.toml with [tool.maxkernel] above the first path (stdin: its
  // --stdin-filename, else the current folder), then the command line.
  const fs::path first = paths[0] == "-" ? fs::path(stdin_filename.empty() ? "-" : stdin_filename)
                                         : fs::path(paths[0]);
  std::error_code ec;
  const fs::path start =
      fs::is_directory(first, ec) ? first : fs::absolute(first, ec).parent_path();
  CheckSettings settings;
  if (const auto pyproject = find_pyproject(start)) {
    std::string error;
    if (!read_pyproject_settings(*pyproject, settings, error)) {
      std::cerr << "maxkernel check: " << error << "\n";
      return 2;
    }
    spdlog::debug("settings from {}", pyproject->string());
  }
  settings.override_with(command_line);
  const std::string target_name = settings.target.value_or("v5e");
  const knowledge::TpuGeneration* target = knowledge::find_tpu_generation(target_name);
  if (!target) {
    std::cerr << "maxkernel check: unknown TPU generation '" << target_name
              << "' (known: " << knowledge::known_generation_names() << ")\n";
    return 2;
  }

  std::vector<std::string> errors;
  std::vector<AnalysedFile> files;
  std::vector<std::string> disk_paths;
  bool read_stdin = false;
  for (const std::string& p : paths) {
    if (p == "-")
      read_stdin = true;
    else
      disk_paths.push_back(p);
  }
  if (read_stdin) {
    std::ostringstream text;
    text << std::cin.rdbuf();
    const fs::path shown = stdin_filename.empty() ? fs::path("-") : fs::path(stdin_filename);
    spdlog::debug("checking {}", shown.string());
    files.push_back(analyse_text(shown, text.str(), start, *target));
  }
  for (const std::string& p : disk_paths) {
    const std::vector<fs::path> found = collect_python_files({p}, errors);
    std::error_code dir_ec;
    if (found.empty() && fs::is_directory(p, dir_ec) && !quiet)
      std::cerr << "maxkernel check: warning: no Python files found under " << p << "\n";
    for (const fs::path& path : found) {
      spdlog::debug("checking {}", path.string());
      files.push_back(analyse_file(path, *target));
      if (!files.back().read_error.empty()) errors.push_back(files.back().read_error);
    }
  }
  for (const std::string& e : errors) std::cerr << "maxkernel check: " << e << "\n";
  for (AnalysedFile& f : files) {
    for (const auto* list : {&f.syntax_errors, &f.analysis.findings}) {
      for (const analysis::Finding& d : *list) {
        if (!settings.reports(d.code)) continue;
        if (ignored_inline(f.text, f.position(d.span.start).line, d.code)) continue;
        f.reported.push_back(d);
      }
    }
  }

  size_t error_count = 0, warning_count = 0, kernel_count = 0;
  for (const AnalysedFile& f : files) {
    kernel_count += f.analysis.model.kernels.size();
    for (const auto& d : f.reported) {
      if (d.severity == analysis::Severity::Error) ++error_count;
      if (d.severity == analysis::Severity::Warning) ++warning_count;
    }
  }

  if (format == "sarif") {
    SarifRun run{target->name, sarif_root.empty() ? default_sarif_root() : fs::path(sarif_root),
                 args, errors};
    std::cout << to_sarif(files, run).dump(2) << "\n";
  } else if (format == "github") {
    for (const AnalysedFile& f : files)
      for (const auto& d : f.reported) std::cout << github_annotation(f, d) << "\n";
  } else if (format == "json") {
    nlohmann::json out{{"target", target->name}, {"files", nlohmann::json::array()}};
    for (const AnalysedFile& f : files) {
      nlohmann::json jf{{"path", f.path.generic_string()},
                        {"syntax_errors", f.analysis.model.syntax_errors},
                        {"task_form", f.analysis.model.task.form()},
                        {"kernels", nlohmann::json::array()},
                        {"diagnostics", nlohmann::json::array()}};
      for (const auto& k : f.analysis.model.kernels) jf["kernels"].push_back(kernel_json(f, k));
      for (const auto& d : f.reported) {
        const auto s = f.position(d.span.start);
        const auto e = f.position(d.span.end);
        jf["diagnostics"].push_back(
            {{"code", d.code},
             {"severity", analysis::to_string(d.severity)},
             {"message", d.message},
             {"line", s.line + 1},
             {"column", s.character + 1},
             {"end_line", e.line + 1},
             {"end_column", e.character + 1},
             {"kernel", d.kernel < f.analysis.model.kernels.size()
                            ? nlohmann::json(f.analysis.model.kernels[d.kernel].name)
                            : nlohmann::json()},
             {"doc", analysis::diagnostic_help_url(d.code)}});
      }
      out["files"].push_back(jf);
    }
    out["summary"] = {{"files", files.size()},
                      {"kernels", kernel_count},
                      {"errors", error_count},
                      {"warnings", warning_count}};
    std::cout << out.dump(2) << "\n";
  } else {
    for (const AnalysedFile& f : files) {
      for (const auto& d : f.reported) {
        const auto s = f.position(d.span.start);
        std::cout << f.path.generic_string() << ":" << s.line + 1 << ":" << s.character + 1 << ": "
                  << analysis::to_string(d.severity) << ": " << d.message << " [" << d.code
                  << "]\n";
      }
    }
  }
  if (!quiet && (format == "text" || format == "github")) {
    std::cerr << files.size() << " file(s), " << kernel_count << " kernel(s), " << error_count
              << " error(s), " << warning_count << " warning(s)\n";
  }
  if (!errors.empty()) return 2;
  return error_count > 0 ? 1 : 0;
}

}  // namespace mk::cli
