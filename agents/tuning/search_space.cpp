// derive_search_space / to_worker_space: tunables found by trying values and re-extracting the
// Pallas model, so aliases (`bm = TUNED_PARAMS["block_m"]`), tuples and arithmetic in block
// shapes are followed by the same evaluator the checks use.
#include "agents/tuning/search_space.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

#include "agents/tuning/python_source.h"
#include "source/pallas/kernel_extractor.h"
#include "source/syntax/python_tree.h"

namespace mk::agents {

namespace {

using pallas::Kernel;
using pallas::Operand;
using pallas::PallasModel;

PallasModel model_of(const std::string& source) {
  syntax::PythonTree tree;
  tree.parse(source);
  return pallas::extract_pallas_model(tree.root(), source);
}

// A plain decimal integer literal (underscores allowed), as written.
std::optional<int64_t> int_literal(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t value = 0;
  bool digits = false;
  for (char c : text) {
    if (c == '_') continue;
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
    digits = true;
  }
  if (!digits || value <= 0) return std::nullopt;
  return value;
}

std::vector<std::string> name_tokens(const std::string& name) {
  std::vector<std::string> out;
  std::string token;
  for (char c : name) {
    if (c == '_') {
      if (!token.empty()) out.push_back(token);
      token.clear();
    } else {
      token += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (!token.empty()) out.push_back(token);
  return out;
}

bool names_a_stage_count(const std::string& name) {
  for (const std::string& t : name_tokens(name)) {
    if (t == "stages" || t == "stage" || t == "buffers" || t == "unroll") return true;
  }
  return false;
}

bool names_a_block_size(const std::string& name) {
  static const std::set<std::string> words = {"block", "blk", "tile", "chunk", "bm", "bn",
                                              "bk",    "bq",  "bkv",  "bh",    "bd", "br",
                                              "bs",    "tm",  "tn",   "tk",    "bt", "tq"};
  for (const std::string& t : name_tokens(name)) {
    if (words.count(t)) return true;
  }
  return false;
}

std::string dims_key(const std::optional<std::vector<std::optional<int64_t>>>& dims) {
  if (!dims) return "?";
  std::string out = "(";
  for (const auto& d : *dims) out += (d ? std::to_string(*d) : std::string("?")) + ",";
  return out + ")";
}

std::string block_key(const pallas::BlockSpec& block) {
  if (block.whole_array) return "whole";
  if (!block.shape) return "?";
  std::string out = "(";
  for (const auto& d : *block.shape) {
    out += d.squeezed ? std::string("None") : d.size ? std::to_string(*d.size) : std::string("?");
    out += ",";
  }
  return out + ")";
}

std::vector<const Operand*> operands_of(const Kernel& k) {
  std::vector<const Operand*> out;
  for (const Operand& op : k.inputs) out.push_back(&op);
  for (const Operand& op : k.outputs) out.push_back(&op);
  return out;
}

// What a problem size changes (array shapes) and what a block size changes (block and scratch
// shapes), as two comparable strings.
struct ModelKeys {
  std::string arrays;
  std::string blocks;   // operand block shapes
  std::string scratch;  // scratch shapes
};
ModelKeys keys_of(const PallasModel& model) {
  ModelKeys keys;
  for (const Kernel& k : model.kernels) {
    // The grid is left out: a problem size the model cannot see as an array shape (inputs
    // built outside the file) still changes the grid, and must not look like a block size.
    keys.arrays += "|";
    keys.blocks += "|";
    for (const Operand* op : operands_of(k)) {
      keys.arrays += dims_key(op->array_shape);
      keys.blocks += block_key(op->block);
    }
    keys.scratch += "|";
    for (const auto& s : k.scratch) keys.scratch += dims_key(s.shape);
  }
  return keys;
}

// Every block dim that differs from the baseline keeps the TPU tiling rule and divides its
// array dim when that is known. `unknown_array` (optional) is set when some changed dim's array
// dim is unknown.
bool changed_blocks_are_legal(const PallasModel& base, const PallasModel& candidate,
                              bool* unknown_array = nullptr) {
  if (base.kernels.size() != candidate.kernels.size()) return false;
  for (size_t k = 0; k < base.kernels.size(); ++k) {
    for (const auto& extent : candidate.kernels[k].grid.extents) {
      if (extent && *extent < 1) return false;
    }
    auto before = operands_of(base.kernels[k]);
    auto after = operands_of(candidate.kernels[k]);
    if (before.size() != after.size()) return false;
    for (size_t o = 0; o < after.size(); ++o) {
      const Operand& op = *after[o];
      if (!op.block.shape || !before[o]->block.shape) continue;
      const auto& dims = *op.block.shape;
      const auto& old_dims = *before[o]->block.shape;
      if (dims.size() != old_dims.size()) return false;
      const size_t rank = dims.size();
      for (size_t d = 0; d < rank; ++d) {
        if (dims[d].squeezed || dims[d].size == old_dims[d].size) continue;
        if (!dims[d].size) return false;  // a known size became unknown: cannot vouch for it
        const int64_t size = *dims[d].size;
        std::optional<int64_t> full;
        if (op.array_shape && op.array_shape->size() == rank) full = (*op.array_shape)[d];
        if (!full && unknown_array) *unknown_array = true;
        if (size < 1 || (full && (size > *full || *full % size != 0))) return false;
        if (full && size == *full) continue;
        const int64_t multiple = (d + 1 == rank) ? 128 : (d + 2 == rank ? 8 : 1);
        if (size % multiple != 0) return false;
      }
    }
  }
  return true;
}

struct Candidate {
  std::string name;
  int64_t current = 0;
  std::string origin;
};

std::vector<Candidate> integer_constants(const ModuleConstants& constants) {
  std::vector<Candidate> out;
  std::set<std::string> seen;
  // The last binding of a name is the one the module runs with.
  for (auto it = constants.bindings.rbegin(); it != constants.bindings.rend(); ++it) {
    if (it->name == "TUNED_PARAMS" || !seen.insert(it->name).second) continue;
    if (auto v = int_literal(it->value_text)) out.push_back({it->name, *v, "module constant"});
  }
  std::reverse(out.begin(), out.end());
  if (constants.tuned_params) {
    for (const auto& entry : constants.tuned_params->entries) {
      if (seen.count(entry.key)) continue;
      if (auto v = int_literal(entry.value_text)) out.push_back({entry.key, *v, "TUNED_PARAMS"});
    }
  }
  return out;
}

// current*2, current/2, current*4, ... (exact halvings only).
std::vector<int64_t> power_of_two_neighbours(int64_t current, int doublings) {
  std::vector<int64_t> out;
  for (int step = 1; step <= doublings; ++step) {
    const int64_t up = current << step;
    if (up > 0 && up <= (int64_t{1} << 24)) out.push_back(up);
    const int64_t factor = int64_t{1} << step;
    if (current % factor == 0 && current / factor >= 1) out.push_back(current / factor);
  }
  return out;
}

// Current first, then the values on the preferred side of it (nearest first), then the others.
void prefer_direction(TunableParam& param, int direction) {
  if (direction == 0) return;
  const int64_t current = param.current.get<int64_t>();
  std::stable_partition(param.values.begin() + 1, param.values.end(), [&](const nlohmann::json& v) {
    return (v.get<int64_t>() - current) * direction > 0;
  });
}

void cap_product(std::vector<TunableParam>& params, size_t max_configs) {
  auto product = [&] {
    size_t p = 1;
    for (const auto& param : params) p *= std::max<size_t>(1, param.values.size());
    return p;
  };
  max_configs = std::max<size_t>(1, max_configs);
  while (product() > max_configs) {
    auto longest = std::max_element(params.begin(), params.end(), [](const auto& a, const auto& b) {
      return a.values.size() < b.values.size();
    });
    if (longest == params.end() || longest->values.size() <= 1) break;
    longest->values.pop_back();  // the farthest from the current value goes first
  }
}

}  // namespace

std::vector<TunableParam> derive_search_space(const std::string& source) {
  return derive_search_space(source, SearchSpaceOptions{});
}

std::vector<TunableParam> derive_search_space(const std::string& source,
                                              const SearchSpaceOptions& options) {
  const ModuleConstants constants = read_module_constants(source);
  const PallasModel base = model_of(source);
  if (base.kernels.empty()) return {};
  const ModelKeys base_keys = keys_of(base);
  std::vector<TunableParam> out;
  for (const Candidate& c : integer_constants(constants)) {
    TunableParam param{c.name, c.current, {nlohmann::json(c.current)}, c.origin};
    const PallasModel probe = model_of(apply_config(source, {{c.name, c.current * 2}}));
    const ModelKeys probe_keys = keys_of(probe);
    if (probe_keys.arrays != base_keys.arrays) continue;  // a problem size, not a tunable
    // A changed block dim whose array dim is unknown may be a whole-array dim (HEAD_DIM in
    // `(None, BQ, HEAD_DIM)` of an input whose shape comes from outside): a problem size unless
    // the name says block/tile.
    bool unknown_array = false;
    changed_blocks_are_legal(base, probe, &unknown_array);
    // A name that changes only scratch shapes (NUM_LANES of an m/l scratch) is tuned only when
    // named like a block size.
    const bool blocks_change = probe_keys.blocks != base_keys.blocks;
    const bool scratch_only = !blocks_change && probe_keys.scratch != base_keys.scratch;
    if ((blocks_change && (!unknown_array || names_a_block_size(c.name))) ||
        (scratch_only && names_a_block_size(c.name))) {
      for (int64_t value : power_of_two_neighbours(c.current, options.doublings)) {
        const PallasModel candidate = model_of(apply_config(source, {{c.name, value}}));
        if (keys_of(candidate).arrays == base_keys.arrays &&
            changed_blocks_are_legal(base, candidate)) {
          param.values.push_back(value);
        }
      }
      prefer_direction(param, options.block_direction);
    } else if (names_a_stage_count(c.name)) {
      for (int64_t value : {c.current + 1, c.current - 1}) {
        if (value >= 1 && value <= 4) param.values.push_back(value);
      }
    } else if (names_a_block_size(c.name)) {
      // Used where the model cannot follow it: keep its alignment (128, else 8) as a guard.
      const int64_t align = c.current % 128 == 0 ? 128 : (c.current % 8 == 0 ? 8 : 1);
      for (int64_t value : power_of_two_neighbours(c.current, options.doublings)) {
        if (value % align == 0) param.values.push_back(value);
      }
      prefer_direction(param, options.block_direction);
    } else {
      continue;
    }
    if (param.values.size() > 1) out.push_back(std::move(param));
  }
  cap_product(out, options.max_configs);
  return out;
}

bool config_keeps_blocks_legal(const std::string& source, const nlohmann::json& config) {
  const PallasModel base = model_of(source);
  const PallasModel candidate = model_of(apply_config(source, config));
  return keys_of(candidate).arrays == keys_of(base).arrays &&
         changed_blocks_are_legal(base, candidate);
}

nlohmann::json to_worker_space(const std::vector<TunableParam>& params, size_t max_configs) {
  std::vector<TunableParam> capped = params;
  cap_product(capped, max_configs);
  nlohmann::json space = nlohmann::json::object();
  for (const TunableParam& p : capped) space[p.name] = p.values;
  return space;
}

}  // namespace mk::agents
