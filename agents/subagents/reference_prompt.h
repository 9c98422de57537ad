// The placeholder values the from-reference prompts add: the entry point and the templates' kernel
// as a starting point (there is no kernel yet; the context's kernel_source is the reference).
#pragma once

#include <map>
#include <string>

#include "agents/subagents/subagents.h"

namespace mk::agents {

std::map<std::string, std::string> reference_prompt_values(const ReferenceStart& start);

}  // namespace mk::agents
