// One run's spending limit, shared by every call of that run (any thread).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "agents/llm/llm_client.h"

namespace mk::llm {

class Budget {
 public:
  // Unset limits are unlimited.
  Budget(std::optional<int64_t> max_tokens, std::optional<double> max_usd)
      : max_tokens_(max_tokens), max_usd_(max_usd) {}

  // Throws LlmError(BudgetExceeded) once a limit has been reached: the call is not made.
  void check_available() const;
  // Records what a call used (input + output tokens, cost).
  void charge(const Usage& usage);

  Usage spent() const;
  bool exhausted() const;

 private:
  bool exhausted_locked() const;

  mutable std::mutex mutex_;
  std::optional<int64_t> max_tokens_;
  std::optional<double> max_usd_;
  Usage spent_;
};

}  // namespace mk::llm
