// One call that turns a parsed document into its Pallas model and static findings.
#pragma once

#include <tree_sitter/api.h>

#include <string_view>

#include "source/analysis/findings.h"
#include "source/pallas/forwarders.h"
#include "source/pallas/kernel_model.h"
#include "source/pallas/model_cache.h"

namespace mk::analysis {

struct DocumentAnalysis {
  pallas::PallasModel model;
  std::vector<Finding> findings;
};

// `cache` (optional) carries per-statement extraction results from one analysis of a document to
// the next; see pallas::ModelCache. `forwarders` are pallas_call wrappers from other files (see
// pallas::extract_pallas_model).
DocumentAnalysis analyze_document(TSNode root, std::string_view source,
                                  const knowledge::TpuGeneration& target,
                                  pallas::ModelCache* cache = nullptr,
                                  const pallas::ForwarderSet* forwarders = nullptr);

}  // namespace mk::analysis
