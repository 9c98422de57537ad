// One call that turns a parsed document into its Pallas model and static findings.
#pragma once

#include <tree_sitter/api.h>

#include <string_view>

#include "lsp/analysis/findings.h"
#include "lsp/pallas/kernel_model.h"

namespace mk::analysis {

struct DocumentAnalysis {
  pallas::PallasModel model;
  std::vector<Finding> findings;
};

DocumentAnalysis analyze_document(TSNode root, std::string_view source,
                                  const knowledge::TpuGeneration& target);

}  // namespace mk::analysis
