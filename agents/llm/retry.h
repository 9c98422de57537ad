// When and how long to wait before another attempt: exponential backoff with full jitter,
// Retry-After honoured, and a wait the CancelFlag can interrupt.
#pragma once

#include <chrono>
#include <optional>
#include <random>
#include <string_view>

#include "agents/llm/llm_client.h"

namespace mk::llm {

struct RetryPolicy {
  int max_attempts = 4;                                // 1: never retry
  std::chrono::milliseconds base_delay{500};           // the first backoff's upper bound
  std::chrono::milliseconds max_delay{30'000};         // cap of one backoff
  std::chrono::milliseconds max_retry_after{120'000};  // a longer Retry-After gives up instead
};

// A Retry-After value: delta-seconds ("120", "1.5") or an HTTP date. nullopt when unreadable.
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Full jitter: uniform in [0, min(max_delay, base_delay * 2^(attempt-1))]; attempt counts from 1.
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt,
                                        std::mt19937_64& rng);

// Waits `delay` in small steps; false as soon as `cancelled` returns true.
bool wait_unless_cancelled(std::chrono::milliseconds delay, const CancelFlag& cancelled);

}  // namespace mk::llm
