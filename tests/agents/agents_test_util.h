// Shared test helpers: repository files by path.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace mk::agents::testing {

inline std::string read_repo_file(const std::string& relative) {
  std::ifstream in(std::string(MK_SOURCE_DIR) + "/" + relative, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace mk::agents::testing
