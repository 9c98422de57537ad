// Time stamps and ids of the records the run and session stores keep.
#pragma once

#include <cstdint>
#include <string>

namespace mk::agents {

int64_t now_seconds();
// A prefix, the UTC time and a random suffix: "r20261130-051402-3fa2".
std::string timestamped_id(char prefix);

}  // namespace mk::agents
