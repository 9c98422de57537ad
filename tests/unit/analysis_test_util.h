// Shared by the analysis tests: the kernel corpus and a comparison of two analyses that names
// the first kernel or finding that differs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "source/analysis/document_analysis.h"

namespace mk::test_util {

inline const knowledge::TpuGeneration& v5e() {
  const auto* gen = knowledge::find_tpu_generation("v5e");
  return gen ? *gen : knowledge::tpu_generations().front();
}

inline std::string describe(const pallas::Kernel& k, const std::string& source) {
  auto at = [&](pallas::Span s) {
    return std::to_string(s.start) + ".." + std::to_string(s.end) + " '" +
           source.substr(s.start, std::min<size_t>(s.end - s.start, 40)) + "'";
  };
  std::ostringstream out;
  out << k.name << " site " << at(k.site_span) << " grid " << at(k.grid.span) << " inputs "
      << k.inputs.size() << " outputs " << k.outputs.size() << " unknowns " << k.unknowns.size();
  return out.str();
}

// Compares everything the server publishes or answers from, the model and the findings, of the
// analysis `got` against `want`.
inline void expect_same(const analysis::DocumentAnalysis& got,
                        const analysis::DocumentAnalysis& want, const std::string& source,
                        const std::string& context) {
  ASSERT_EQ(got.model.kernels.size(), want.model.kernels.size()) << context;
  for (size_t i = 0; i < want.model.kernels.size(); ++i) {
    EXPECT_TRUE(got.model.kernels[i] == want.model.kernels[i])
        << context << "\nkernel " << i << "\n got:  " << describe(got.model.kernels[i], source)
        << "\n want: " << describe(want.model.kernels[i], source);
  }
  EXPECT_TRUE(got.model == want.model) << context;
  ASSERT_EQ(got.findings.size(), want.findings.size()) << context;
  for (size_t i = 0; i < want.findings.size(); ++i) {
    EXPECT_TRUE(got.findings[i] == want.findings[i])
        << context << "\nfinding " << i << ": got " << got.findings[i].code << " "
        << got.findings[i].message << " / want " << want.findings[i].code << " "
        << want.findings[i].message;
  }
}

inline std::vector<std::filesystem::path> corpus_files() {
  const std::filesystem::path root = MK_SOURCE_DIR;
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"tests/corpus/good", "tests/corpus/bad", "examples"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / dir)) {
      if (entry.path().extension() == ".py") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace mk::test_util
