// Bytes per block and the VMEM a kernel needs per grid step, from static facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "source/pallas/kernel_model.h"

namespace mk::analysis {

// Logical bytes of one block of an operand (squeezed dims count 1); nullopt when unknown.
std::optional<int64_t> block_bytes(const pallas::Operand& operand);
// Bytes once the last two dims are padded to the TPU's (sublane, 128-lane) tiles.
std::optional<int64_t> padded_block_bytes(const pallas::Operand& operand);

// Bytes of a scratch buffer (tile-padded like a block); nullopt when unknown.
std::optional<int64_t> scratch_bytes(const pallas::Scratch& scratch);

struct VmemPart {
  std::string what;
  std::optional<int64_t> bytes;  // all buffers of this part
};

struct VmemEstimate {
  int64_t known_bytes = 0;  // a lower bound when incomplete
  bool complete = true;
  std::vector<VmemPart> parts;
};

VmemEstimate estimate_vmem(const pallas::Kernel& kernel);
std::optional<int64_t> total_grid_steps(const pallas::Kernel& kernel);
std::string format_bytes(int64_t bytes);     // "64 KiB", "1.5 MiB"
std::string format_seconds(double seconds);  // "12.3 us", "17.9 ms", "1.25 s"

}  // namespace mk::analysis
