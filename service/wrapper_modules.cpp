#include "service/wrapper_modules.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include "source/pallas/kernel_extractor.h"
#include "source/syntax/module_layout.h"
#include "source/syntax/python_tree.h"

namespace mk::service {

namespace fs = std::filesystem;

namespace {

// Top-level packages that are never a workspace's own wrappers: no need to look for them.
bool is_library(const std::string& qualified) {
  static const char* const kLibraries[] = {"jax",    "numpy",       "functools", "math",
                                           "typing", "dataclasses", "os",        "sys"};
  const std::string top = qualified.substr(0, qualified.find('.'));
  for (const char* lib : kLibraries)
    if (top == lib) return true;
  return false;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

WrapperModules::WrapperModules(ReadFile read) : read_(std::move(read)) {}

std::optional<std::string> WrapperModules::read_from_disk(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path WrapperModules::project_root(const fs::path& file) {
  std::error_code ec;
  const fs::path start = fs::absolute(file, ec).parent_path();
  for (fs::path dir = start; !dir.empty(); dir = dir.parent_path()) {
    for (const char* marker : {"pyproject.toml", "setup.py", ".git"})
      if (fs::exists(dir / marker, ec)) return dir;
    if (dir == dir.parent_path()) break;
  }
  return start;
}

std::optional<fs::path> WrapperModules::locate(const std::string& module,
                                               const fs::path& from_dir) const {
  fs::path relative;
  for (size_t start = 0; start <= module.size();) {
    const size_t dot = std::min(module.find('.', start), module.size());
    relative /= module.substr(start, dot - start);
    start = dot + 1;
  }
  std::vector<fs::path> dirs = {from_dir};
  dirs.insert(dirs.end(), roots_.begin(), roots_.end());
  for (const fs::path& dir : dirs) {
    fs::path file = dir / relative;
    file += ".py";
    if (is_file(file)) return file.lexically_normal();
    if (is_file(dir / relative / "__init__.py"))
      return (dir / relative / "__init__.py").lexically_normal();
  }
  return std::nullopt;
}

const std::vector<pallas::Forwarder>& WrapperModules::wrappers_in(const fs::path& file) {
  auto it = modules_.find(file);
  if (it != modules_.end()) return it->second;
  std::vector<pallas::Forwarder> found;
  if (std::optional<std::string> text = read_(file)) {
    syntax::PythonTree tree;
    tree.parse(*text);
    found = pallas::find_forwarders(tree.root(), *text);
    // A def named pallas_call that forwards nothing shadows Pallas' own: `block.pallas_call`
    // is then no kernel site. A module that only re-exports pallas_call has no such def.
    const bool forwards = std::any_of(found.begin(), found.end(), [](const pallas::Forwarder& f) {
      return f.name == "pallas_call";
    });
    if (!forwards && syntax::top_level_function(tree, *text, "pallas_call")) {
      pallas::Forwarder shadow;
      shadow.name = "pallas_call";
      shadow.shadows_pallas_call = true;
      found.push_back(std::move(shadow));
    }
  }
  return modules_.emplace(file, std::move(found)).first->second;
}

pallas::ForwarderSet WrapperModules::forwarders_for(const std::vector<std::string>& imports,
                                                    const fs::path& from_dir,
                                                    std::vector<fs::path>* used) {
  pallas::ForwarderSet out;
  for (const std::string& qualified : imports) {
    if (is_library(qualified)) continue;
    // `pkg.block` names a module (its wrappers are pkg.block.<name>); `pkg.block.call` names
    // one function of module pkg.block.
    const size_t last_dot = qualified.rfind('.');
    std::vector<std::pair<std::string, std::string>> candidates = {{qualified, ""}};
    if (last_dot != std::string::npos)
      candidates.emplace_back(qualified.substr(0, last_dot), qualified.substr(last_dot + 1));
    for (const auto& [module, function] : candidates) {
      std::optional<fs::path> file = locate(module, from_dir);
      if (!file) continue;
      if (used) used->push_back(*file);
      for (const pallas::Forwarder& f : wrappers_in(*file)) {
        if (!function.empty() && f.name != function) continue;
        pallas::Forwarder named = f;
        named.name = module + "." + f.name;
        out.insert_or_assign(named.name, std::move(named));
      }
      break;
    }
  }
  return out;
}

bool WrapperModules::forget(const fs::path& file) {
  return modules_.erase(file.lexically_normal()) > 0;
}

}  // namespace mk::service
