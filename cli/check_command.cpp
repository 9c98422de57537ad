#include "cli/check_command.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/argument_reader.h"
#include "cli/sarif.h"
#include "cli/source_file.h"
#include "source/analysis/describe.h"
#include "source/analysis/doc_links.h"
#include "source/analysis/vmem.h"

namespace mk::cli {

namespace {

constexpr const char* kCheckUsage =
    "usage: maxkernel check [--target GEN] [--format text|json|sarif] PATH...\n"
    "  Statically checks the Pallas kernels in Python files (folders are searched for *.py).\n"
    "  Exit status: 0 no errors, 1 errors found, 2 bad usage or unreadable input.\n";

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
  std::string target_name = "v5e";
  std::string format = "text";
  std::vector<std::string> paths;
  if (auto status = read_arguments(args, "check", kCheckUsage, [&](ArgumentReader& r) {
        if (r.is("--target"))
          target_name = r.value();
        else if (r.is("--format"))
          format = r.value();
        else if (!r.is_option())
          paths.push_back(r.current());
        else
          return false;
        return true;
      }))
    return *status;
  if (format != "text" && format != "json" && format != "sarif") {
    std::cerr << "maxkernel check: unknown format '" << format << "' (text, json or sarif)\n";
    return 2;
  }
  const knowledge::TpuGeneration* target = knowledge::find_tpu_generation(target_name);
  if (!target) {
    std::cerr << "maxkernel check: unknown TPU generation '" << target_name
              << "' (known: " << knowledge::known_generation_names() << ")\n";
    return 2;
  }
  if (paths.empty()) {
    std::cerr << kCheckUsage;
    return 2;
  }
  std::vector<std::string> errors;
  std::vector<AnalysedFile> files;
  for (const auto& p : collect_python_files(paths, errors)) {
    files.push_back(analyse_file(p, *target));
    if (!files.back().read_error.empty()) errors.push_back(files.back().read_error);
  }
  for (const std::string& e : errors) std::cerr << "maxkernel check: " << e << "\n";

  size_t error_count = 0, warning_count = 0, kernel_count = 0;
  for (const AnalysedFile& f : files) {
    kernel_count += f.analysis.model.kernels.size();
    for (const auto& d : f.analysis.findings) {
      if (d.severity == analysis::Severity::Error) ++error_count;
      if (d.severity == analysis::Severity::Warning) ++warning_count;
    }
  }

  if (format == "sarif") {
    std::cout << to_sarif(files, target->name).dump(2) << "\n";
  } else if (format == "json") {
    nlohmann::json out{{"target", target->name}, {"files", nlohmann::json::array()}};
    for (const AnalysedFile& f : files) {
      nlohmann::json jf{{"path", f.path.generic_string()},
                        {"syntax_errors", f.analysis.model.syntax_errors},
                        {"task_form", f.analysis.model.task.form()},
                        {"kernels", nlohmann::json::array()},
                        {"diagnostics", nlohmann::json::array()}};
      for (const auto& k : f.analysis.model.kernels) jf["kernels"].push_back(kernel_json(f, k));
      for (const auto& d : f.analysis.findings) {
        const auto s = f.position(d.span.start);
        const auto e = f.position(d.span.end);
        jf["diagnostics"].push_back({{"code", d.code},
                                     {"severity", analysis::to_string(d.severity)},
                                     {"message", d.message},
                                     {"line", s.line + 1},
                                     {"column", s.character + 1},
                                     {"end_line", e.line + 1},
                                     {"end_column", e.character + 1},
                                     {"kernel", f.analysis.model.kernels[d.kernel].name},
                                     {"doc", analysis::diagnostic_doc_url(d.code)}});
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
      for (const auto& d : f.analysis.findings) {
        const auto s = f.position(d.span.start);
        std::cout << f.path.generic_string() << ":" << s.line + 1 << ":" << s.character + 1 << ": "
                  << analysis::to_string(d.severity) << ": " << d.message << " [" << d.code
                  << "]\n";
      }
    }
    std::cerr << files.size() << " file(s), " << kernel_count << " kernel(s), " << error_count
              << " error(s), " << warning_count << " warning(s)\n";
  }
  if (!errors.empty()) return 2;
  return error_count > 0 ? 1 : 0;
}

}  // namespace mk::cli
