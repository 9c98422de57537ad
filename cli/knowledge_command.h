// maxkernel knowledge: add documents to the knowledge store, search it the way the agents do,
// and list or record lessons.
#pragma once

#include <string>
#include <vector>

namespace mk::cli {

// args: everything after "knowledge". Returns the process exit status.
int run_knowledge(const std::vector<std::string>& args);

}  // namespace mk::cli
