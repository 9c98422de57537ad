#include "agents/llm/fixture_recorder.h"

#include <filesystem>
#include <fstream>

#include "agents/llm/llm_client.h"
#include "agents/llm/redact.h"

namespace mk::llm {

namespace {

void redact_strings(nlohmann::json& value, const std::vector<std::string>& secrets) {
  if (value.is_string()) {
    value = redact(value.get<std::string>(), secrets);
  } else if (value.is_structured()) {
    for (auto& item : value) redact_strings(item, secrets);
  }
}

}  // namespace

FixtureRecorder::FixtureRecorder(std::string path, std::string provider, std::string model,
                                 std::vector<std::string> secrets)
    : path_(std::move(path)), secrets_(std::move(secrets)) {
  document_ = {{"format", "maxkernel-llm-fixture/1"},
               {"provider", std::move(provider)},
               {"model", std::move(model)},
               {"entries", nlohmann::json::array()}};
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked();
}

void FixtureRecorder::add(nlohmann::json entry) {
  redact_strings(entry, secrets_);
  std::lock_guard<std::mutex> lock(mutex_);
  document_["entries"].push_back(std::move(entry));
  write_locked();
}

void FixtureRecorder::write_locked() {
  std::string temporary = path_ + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) throw LlmError(ErrorKind::Config, "cannot write the LLM fixture " + path_);
    out << document_.dump(2) << '\n';
    if (!out) throw LlmError(ErrorKind::Config, "cannot write the LLM fixture " + path_);
  }
  std::error_code error;
  std::filesystem::rename(temporary, path_, error);
  if (error)
    throw LlmError(ErrorKind::Config,
                   "cannot write the LLM fixture " + path_ + ": " + error.message());
}

}  // namespace mk::llm
