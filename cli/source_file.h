// A Python file on disk, parsed and analysed the same way the server analyses an open document.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "source/analysis/document_analysis.h"
#include "source/text/line_index.h"

namespace mk::cli {

struct AnalysedFile {
  std::filesystem::path path;
  std::string text;
  text::LineIndex lines;
  analysis::DocumentAnalysis analysis;
  // Python syntax errors (MK000): a file that does not parse is an error, never a clean pass.
  std::vector<analysis::Finding> syntax_errors;
  // What `check` reports: the syntax errors and findings left after --select/--ignore and the
  // file's inline ignore comments (filled by the command).
  std::vector<analysis::Finding> reported;
  std::string read_error;  // non-empty when the file could not be read

  text::Utf16Position position(uint32_t offset) const { return lines.position_of(text, offset); }
};

// The whole file as bytes, or nullopt when it cannot be opened.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

// Expands folders to the .py files under them (sorted), keeps files as given.
std::vector<std::filesystem::path> collect_python_files(const std::vector<std::string>& paths,
                                                        std::vector<std::string>& errors);
AnalysedFile analyse_file(const std::filesystem::path& path,
                          const knowledge::TpuGeneration& target);
// `text` shown as `path`; wrapper modules are looked up from `folder` and its project.
AnalysedFile analyse_text(const std::filesystem::path& path, std::string text,
                          const std::filesystem::path& folder,
                          const knowledge::TpuGeneration& target);

}  // namespace mk::cli
