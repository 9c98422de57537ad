// Tester: extra input shapes, nothing else.
#include "agents/subagents/subagents.h"

namespace mk::agents {

ExtraCases extra_test_cases(llm::Client& client, const AgentContext& context, size_t max_shapes,
                            const llm::CancelFlag& cancelled) {
  ExtraCases result;
  ask_agent(
      client, context, {"tester", {{"max_shapes", std::to_string(max_shapes)}}, 1024},
      [&](const std::string& answer) { result.shapes = parse_shapes_answer(answer, max_shapes); },
      result, cancelled);
  return result;
}

}  // namespace mk::agents
