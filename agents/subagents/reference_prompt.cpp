#include "agents/subagents/reference_prompt.h"

namespace mk::agents {

std::map<std::string, std::string> reference_prompt_values(const ReferenceStart& start) {
  return {{"entry_point", start.entry_point.empty() ? "(as the task says)" : start.entry_point},
          {"start_kernel", start.start_kernel.empty()
                               ? std::string("(none: no template covers this reference)")
                               : "```python\n" + start.start_kernel + "\n```"}};
}

}  // namespace mk::agents
