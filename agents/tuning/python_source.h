// Small helpers the agents share for reading and rewriting Python source text: a clean-parse
// check, module-level bindings (constants and the TUNED_PARAMS dict), byte-range edits and JSON
// values written as Python literals.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mk::agents {

struct ParseCheck {
  bool ok = true;
  std::string error;  // "line 12, column 5: syntax error near `)`" when !ok
};
// Parses with tree-sitter; fails on any ERROR or MISSING node.
ParseCheck check_python_syntax(const std::string& source);
// True when some identifier or attribute in the code (not a comment or string) is `pallas_call`.
bool mentions_pallas_call(const std::string& source);

// A byte range of the source and what replaces it.
struct SourceEdit {
  uint32_t start = 0;
  uint32_t end = 0;
  std::string text;
};
// Applies non-overlapping edits (any order); throws std::invalid_argument on overlap or range.
std::string apply_edits(const std::string& source, std::vector<SourceEdit> edits);

// A module-level name bound to one expression: `BLOCK = 128` or one element of
// `BM, BN = 1024, 512`.
struct ModuleBinding {
  std::string name;
  uint32_t value_start = 0, value_end = 0;  // the bound expression
  std::string value_text;
  bool from_tuple = false;  // bound by a tuple assignment (the worker's autotune cannot set it)
};
// The last module-level `TUNED_PARAMS = {...}` dict literal.
struct TunedParamsDict {
  struct Entry {
    std::string key;
    uint32_t value_start = 0, value_end = 0;
    std::string value_text;
  };
  std::vector<Entry> entries;
  uint32_t open_brace = 0;   // byte offset of `{`
  uint32_t close_brace = 0;  // byte offset of `}`
  bool trailing_comma = false;
  bool multiline = false;
  std::string entry_indent;  // indentation of the entries when multiline
};
struct ModuleConstants {
  std::vector<ModuleBinding> bindings;  // in source order; a name may repeat (last one wins)
  std::optional<TunedParamsDict> tuned_params;
};
ModuleConstants read_module_constants(const std::string& source);

// JSON scalars, lists and objects as Python literals (true -> True, null -> None, lists as lists).
std::string python_literal(const nlohmann::json& value);

// Line (1-based) of a byte offset.
int line_of(const std::string& source, uint32_t offset);

}  // namespace mk::agents
