// Tester: extra input shapes, nothing else.
#include <set>

#include "agents/subagents/subagents.h"

namespace mk::agents {

namespace {

// "[512, 128], [128, 256]; sizes: 512 (multiples of 128), 128 (multiples of 128)".
std::string describe_inputs(const std::vector<std::vector<int64_t>>& shapes,
                            std::vector<int64_t>& sizes) {
  std::string out;
  std::set<int64_t> seen;
  for (const auto& shape : shapes) {
    out += out.empty() ? "[" : ", [";
    for (size_t i = 0; i < shape.size(); ++i) {
      out += (i ? ", " : "") + std::to_string(shape[i]);
      if (seen.insert(shape[i]).second) sizes.push_back(shape[i]);
    }
    out += "]";
  }
  out += "; sizes:";
  for (size_t i = 0; i < sizes.size(); ++i)
    out += (i ? ", " : " ") + std::to_string(sizes[i]) + " (multiples of " +
           std::to_string(size_granularity(sizes[i])) + ")";
  return out;
}

}  // namespace

ExtraCases extra_test_cases(llm::Client& client, const AgentContext& context,
                            const std::vector<std::vector<int64_t>>& input_shapes,
                            size_t max_shapes, const llm::CancelFlag& cancelled) {
  ExtraCases result;
  std::vector<int64_t> sizes;
  const std::string inputs = describe_inputs(input_shapes, sizes);
  ask_agent(
      client, context,
      {"tester", {{"max_shapes", std::to_string(max_shapes)}, {"input_shapes", inputs}}, 1024},
      [&](const std::string& answer) {
        result.shapes = parse_shape_cases_answer(answer, sizes, max_shapes);
      },
      result, cancelled);
  return result;
}

}  // namespace mk::agents
