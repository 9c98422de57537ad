// Human-readable views of a kernel: hover markdown, inlay hint labels, one-line summaries.
#pragma once

#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "source/pallas/kernel_model.h"

namespace mk::analysis {

std::string kernel_summary(const pallas::Kernel& kernel);  // "grid (8, 8, 4), 2 in, 1 out, TPU"
std::string hover_markdown(const pallas::Kernel& kernel, const knowledge::TpuGeneration& target);

struct InlayLabel {
  uint32_t offset;  // byte offset the label sits after
  std::string label;
  std::string tooltip;
};
std::vector<InlayLabel> inlay_labels(const pallas::Kernel& kernel,
                                     const knowledge::TpuGeneration& target);

}  // namespace mk::analysis
