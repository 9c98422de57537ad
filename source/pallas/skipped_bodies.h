// A model extracted from a first parse that read the bodies of kernel defs as blank
// (KernelRegions::skipped): whether it is the model a full parse gives. Its spans are: the edit
// that marks each body's real bytes stretches the one-token body over them.
#pragma once

#include <vector>

#include "source/pallas/kernel_model.h"
#include "source/pallas/kernel_regions.h"

namespace mk::pallas {

// The bodies, as PythonTree::parse_partial reads them as blank.
std::vector<syntax::ByteSpan> skipped_spans(const std::vector<SkippedBody>& skipped);

// Whether the model read something of a skipped body: a skipped def that is also an index map
// (whose returned tuple is in its body). The model is then not the full parse's.
bool reads_skipped_body(const PallasModel& model, const std::vector<SkippedBody>& skipped);

}  // namespace mk::pallas
