#include "cli/source_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "service/wrapper_modules.h"
#include "source/analysis/syntax_findings.h"
#include "source/pallas/kernel_extractor.h"
#include "source/syntax/python_tree.h"

namespace mk::cli {

namespace fs = std::filesystem;

std::vector<fs::path> collect_python_files(const std::vector<std::string>& paths,
                                           std::vector<std::string>& errors) {
  std::vector<fs::path> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (auto it = fs::recursive_directory_iterator(
               p, fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const auto name = it->path().filename().string();
        if (it->is_directory() &&
            (name.starts_with(".") || name == "__pycache__" || name == "node_modules")) {
          it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file() && it->path().extension() == ".py") found.push_back(it->path());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      out.emplace_back(p);
    } else {
      errors.push_back(p + ": no such file or directory");
    }
  }
  return out;
}

std::optional<std::string> read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

AnalysedFile analyse_file(const fs::path& path, const knowledge::TpuGeneration& target) {
  auto text = read_text_file(path);
  if (!text) {
    AnalysedFile f;
    f.path = path;
    f.read_error = "cannot read " + path.string();
    return f;
  }
  std::error_code ec;
  return analyse_text(path, std::move(*text), fs::absolute(path, ec).parent_path(), target);
}

AnalysedFile analyse_text(const fs::path& path, std::string text, const fs::path& folder,
                          const knowledge::TpuGeneration& target) {
  AnalysedFile f;
  f.path = path;
  f.text = std::move(text);
  f.lines = text::LineIndex(f.text);
  syntax::PythonTree tree;
  tree.parse(f.text);
  // pallas_call wrappers imported from the file's folder or its project (pyproject.toml,
  // setup.py or .git above it).
  service::WrapperModules wrappers;
  wrappers.set_roots({service::WrapperModules::project_root(folder / "-")});
  const pallas::ForwarderSet forwarders =
      wrappers.forwarders_for(pallas::imported_names(tree.root(), f.text), folder);
  f.analysis = analysis::analyze_document(tree.root(), f.text, target, nullptr, &forwarders);
  f.syntax_errors = analysis::syntax_findings(tree.root(), f.text);
  return f;
}

}  // namespace mk::cli
