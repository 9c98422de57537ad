// Record mode: every exchange a client makes, written to a fixture the replay server can serve.
// The file is one JSON document (see docs/llm.md), rewritten whole after each exchange so it is
// valid even if the run stops half-way. Keys are redacted before anything is written.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::llm {

class FixtureRecorder {
 public:
  FixtureRecorder(std::string path, std::string provider, std::string model,
                  std::vector<std::string> secrets);

  // One entry; every string in it is redacted. Throws LlmError(Config) when the file cannot be
  // written.
  void add(nlohmann::json entry);
  const std::string& path() const { return path_; }

 private:
  void write_locked();

  std::mutex mutex_;
  std::string path_;
  nlohmann::json document_;
  std::vector<std::string> secrets_;
};

}  // namespace mk::llm
