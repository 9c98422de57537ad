// Parsers for the sub-agents' answers. Each throws AnswerFormatError with a message that can be
// quoted back to the model in the one retry.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/subagents/shape_cases.h"

namespace mk::agents {

class AnswerFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Strategy {
  std::string name;
  std::string why;
  std::string expected_effect;
};

struct Analysis {
  std::string bottleneck;
  std::string evidence;
  std::vector<Strategy> next_strategies;
};

// The whole Python file from ONE ```python (or ```py, or untagged) fenced block; it must parse
// with tree-sitter without ERROR nodes and contain a pallas_call.
std::string parse_python_file_answer(const std::string& answer);

// A JSON object from a ```json fenced block, or the whole answer when it is a bare object.
nlohmann::json parse_json_answer(const std::string& answer);

// {"strategies": [{name, why, expected_effect}, ...]}: 1..max non-empty strategies.
std::vector<Strategy> parse_plan_answer(const std::string& answer, size_t max_strategies = 5);

// {"cases": [{"sizes": {"SIZE": NEW_SIZE}, "why": "..."}, ...]}: 1..max_cases extra shapes of a
// task with these input sizes, each fair by shape_case_error; named tester_1, tester_2, ...
// Nothing else in the answer is read (never a reference, inputs or tolerances).
std::vector<ShapeCase> parse_shape_cases_answer(const std::string& answer,
                                                const std::vector<int64_t>& task_sizes,
                                                size_t max_cases = 4);

// {"extra_values": {"NAME": [positive ints]}}: only names in `known`, at most max_values each.
std::map<std::string, std::vector<int64_t>> parse_extra_values_answer(
    const std::string& answer, const std::vector<std::string>& known, size_t max_values = 4);

// {"bottleneck": "...", "evidence": "...", "next_strategies": [...]}
Analysis parse_analysis_answer(const std::string& answer, size_t max_strategies = 5);

}  // namespace mk::agents
