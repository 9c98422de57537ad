// window/workDoneProgress/cancel of a background job, written once for the server's kernel runs,
// HITL host work and optimization runs: each keeps a map of jobs that carry their progress token
// (`progress`) and a shared cancel flag (`cancelled`) the job's worker polls. Main-loop only.
#pragma once

#include <string>

namespace mk::server {

// Flips the cancel flag of the job in `jobs` whose progress token is `token`; the job's key, or
// null when none has it.
template <class JobMap>
const typename JobMap::key_type* cancel_by_progress_token(JobMap& jobs, const std::string& token) {
  for (auto& [key, job] : jobs) {
    if (job.progress != token) continue;
    job.cancelled->store(true);
    return &key;
  }
  return nullptr;
}

}  // namespace mk::server
