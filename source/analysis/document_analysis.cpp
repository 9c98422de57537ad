#include "source/analysis/document_analysis.h"

#include "source/pallas/kernel_extractor.h"

namespace mk::analysis {

DocumentAnalysis analyze_document(TSNode root, std::string_view source,
                                  const knowledge::TpuGeneration& target, pallas::ModelCache* cache,
                                  const pallas::ForwarderSet* forwarders) {
  DocumentAnalysis out;
  out.model = pallas::extract_pallas_model(root, source, cache, forwarders);
  out.findings = check_model(out.model, target);
  return out;
}

}  // namespace mk::analysis
