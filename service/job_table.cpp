#include "service/job_table.h"

namespace mk::service {

std::shared_ptr<std::atomic<bool>> JobTable::add(const std::string& id, const std::string& group,
                                                 const std::string& progress,
                                                 const std::string& uri) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  jobs_[id] = Job{id, group, uri, progress, flag};
  return flag;
}

std::optional<Job> JobTable::remove(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  Job job = std::move(it->second);
  jobs_.erase(it);
  return job;
}

const Job* JobTable::find(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

bool JobTable::cancel(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  it->second.cancelled->store(true);
  return true;
}

const Job* JobTable::cancel_by_progress_token(const std::string& token) {
  for (auto& [id, job] : jobs_) {
    if (job.progress != token) continue;
    job.cancelled->store(true);
    return &job;
  }
  return nullptr;
}

void JobTable::cancel_group(const std::string& group) {
  for (auto& [id, job] : jobs_)
    if (job.group == group) job.cancelled->store(true);
}

size_t JobTable::count(const std::string& group) const {
  size_t n = 0;
  for (const auto& [id, job] : jobs_) n += job.group == group ? 1 : 0;
  return n;
}

std::vector<const Job*> JobTable::jobs(const std::string& group) const {
  std::vector<const Job*> out;
  for (const auto& [id, job] : jobs_)
    if (job.group == group) out.push_back(&job);
  return out;
}

}  // namespace mk::service
