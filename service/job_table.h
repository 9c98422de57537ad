// The background jobs a front end has running: each with its progress token and a cancel flag
// its worker polls, grouped by the feature that started it ("kernel", "hitl", "optimize"), so a
// cancel by token, a cancel by id and the per-feature counts are written once. Not thread-safe:
// the owner's one thread (the server's main loop) uses it.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mk::service {

struct Job {
  std::string id;
  std::string group;     // the feature that started it
  std::string uri;       // the document it runs for ("" when none)
  std::string progress;  // its $/progress token
  std::shared_ptr<std::atomic<bool>> cancelled;
};

class JobTable {
 public:
  // Registers a job (replacing one of the same id); its cancel flag.
  std::shared_ptr<std::atomic<bool>> add(const std::string& id, const std::string& group,
                                         const std::string& progress, const std::string& uri = "");
  // Removes a job; the removed job, nullopt when there was none of that id.
  std::optional<Job> remove(const std::string& id);
  const Job* find(const std::string& id) const;
  // Flips one job's cancel flag; false when no job has that id.
  bool cancel(const std::string& id);
  // Flips the flag of the job reporting on `token`; that job, or nullptr when none does.
  const Job* cancel_by_progress_token(const std::string& token);
  void cancel_group(const std::string& group);
  size_t count(const std::string& group) const;
  // The group's jobs, in id order.
  std::vector<const Job*> jobs(const std::string& group) const;

 private:
  std::map<std::string, Job> jobs_;  // by id
};

}  // namespace mk::service
