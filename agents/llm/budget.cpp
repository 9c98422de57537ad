#include "agents/llm/budget.h"

#include <spdlog/fmt/fmt.h>

namespace mk::llm {

bool Budget::exhausted_locked() const {
  if (max_tokens_ && spent_.input_tokens + spent_.output_tokens >= *max_tokens_) return true;
  if (max_usd_ && spent_.cost_usd >= *max_usd_) return true;
  return false;
}

void Budget::check_available() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!exhausted_locked()) return;
  std::string limits;
  if (max_tokens_)
    limits +=
        fmt::format("{} of {} tokens", spent_.input_tokens + spent_.output_tokens, *max_tokens_);
  if (max_usd_) {
    if (!limits.empty()) limits += ", ";
    limits += fmt::format("${:.4f} of ${:.4f}", spent_.cost_usd, *max_usd_);
  }
  throw LlmError(ErrorKind::BudgetExceeded,
                 "the run's LLM budget is spent (" + limits + "); no further calls are made");
}

void Budget::charge(const Usage& usage) {
  std::lock_guard<std::mutex> lock(mutex_);
  spent_ += usage;
}

Usage Budget::spent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spent_;
}

bool Budget::exhausted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exhausted_locked();
}

}  // namespace mk::llm
