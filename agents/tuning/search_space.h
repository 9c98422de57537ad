// The autotuner's search space, derived from the source alone (no LLM): block/tile sizes and
// stage counts, their candidate values, and writing one configuration back into the source.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace mk::agents {

struct TunableParam {
  std::string name;                    // a module-level constant (BLOCK_M) or a TUNED_PARAMS key
  nlohmann::json current;              // its value in the source
  std::vector<nlohmann::json> values;  // candidate values, current first
  std::string origin;                  // "module constant" | "TUNED_PARAMS"
};

struct SearchSpaceOptions {
  size_t max_configs = 64;  // the Cartesian product of all values is trimmed to this
  int doublings = 2;        // powers of two tried on each side of the current value
  // +1 / -1: a block size's larger / smaller values come right after the current one, so the
  // trimming (which drops values from the end) keeps that side; 0: both sides, nearest first.
  // Stage counts keep their order.
  int block_direction = 0;
};

// Block sizes, tile sizes, stage counts: powers of two around the current value. A parameter is
// a block size when changing it changes a block shape of a pallas_call (the Pallas model is
// re-extracted per candidate value); a candidate is kept only when every block dim it changes
// keeps the (8, 128) rule (multiple of 8 / 128 in the last two dims, or the whole array dim) and
// divides the array dim when that is known. A parameter that changes an array shape is a
// problem size and never tuned.
std::vector<TunableParam> derive_search_space(const std::string& source);
std::vector<TunableParam> derive_search_space(const std::string& source,
                                              const SearchSpaceOptions& options);

// Whether `config` keeps every block dim it changes legal (the same test as above) and changes
// no array shape. For values proposed from elsewhere (an LLM widening the space).
bool config_keeps_blocks_legal(const std::string& source, const nlohmann::json& config);

// {"NAME": [values...]}, values dropped from the end of the longest lists until the product is at
// most max_configs (each list keeps at least its current value).
nlohmann::json to_worker_space(const std::vector<TunableParam>& params, size_t max_configs);

// The source with the config's values written in (module constant assignment replaced, or the
// TUNED_PARAMS dict entry replaced/added), everything else byte-identical. Throws
// std::invalid_argument with a clear message when a name is not found.
std::string apply_config(const std::string& source, const nlohmann::json& config);

}  // namespace mk::agents
