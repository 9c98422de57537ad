#include "source/pallas/skipped_bodies.h"

#include <algorithm>

namespace mk::pallas {

namespace {

// The skipped def whose header holds `offset`, or nullptr.
const SkippedBody* header_at(const std::vector<SkippedBody>& skipped, uint32_t offset) {
  auto it = std::upper_bound(skipped.begin(), skipped.end(), offset,
                             [](uint32_t at, const SkippedBody& s) { return at < s.def_start; });
  if (it == skipped.begin()) return nullptr;
  --it;
  return offset < it->body.start ? &*it : nullptr;
}

}  // namespace

std::vector<syntax::ByteSpan> skipped_spans(const std::vector<SkippedBody>& skipped) {
  std::vector<syntax::ByteSpan> spans;
  spans.reserve(skipped.size());
  for (const SkippedBody& s : skipped) spans.push_back(s.body);
  return spans;
}

bool reads_skipped_body(const PallasModel& model, const std::vector<SkippedBody>& skipped) {
  if (skipped.empty()) return false;
  for (const Kernel& k : model.kernels) {
    for (const std::vector<Operand>* operands : {&k.inputs, &k.outputs}) {
      for (const Operand& op : *operands) {
        if (op.block.index_map && header_at(skipped, op.block.index_map->span.start)) return true;
      }
    }
  }
  return false;
}

}  // namespace mk::pallas
