// The contract every LLM provider implements, and what the rest of MaxKernel (sub-agents,
// orchestration, CLI, server) sees of an LLM. Plain structs; no libcurl or nlohmann types here.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mk::llm {

enum class Role { System, User, Assistant };

struct Message {
  Role role = Role::User;
  std::string text;
};

struct ChatRequest {
  std::vector<Message> messages;  // a System message, if any, comes first
  int max_output_tokens = 4096;
  double temperature = 0.2;
  bool stream = true;
  std::string purpose;  // "planner", "implementer", ...: for logs, usage and replay matching
};

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_input_tokens = 0;
  double cost_usd = 0;  // from the configured price table; 0 when the model has no price
  Usage& operator+=(const Usage& other);
};

struct ChatResponse {
  std::string text;
  std::string finish_reason;  // "stop", "length", "content_filter", ...
  Usage usage;
  std::string model;
  int attempts = 1;  // HTTP attempts including retries
};

// Why a call failed, in words a user can act on. Never contains an API key.
enum class ErrorKind {
  BadKey,          // 401 / 403
  ModelNotFound,   // 404
  ContextTooLong,  // the prompt does not fit the model
  Refused,         // the provider's content filter or safety block
  RateLimited,     // 429 after all retries
  ServerError,     // 5xx after all retries
  Network,         // connect/DNS/reset/timeouts after all retries
  Malformed,       // a body that is not the wire format
  Cancelled,       // the caller's token flipped
  BudgetExceeded,  // the run's budget would be or was exceeded
  Config,          // a missing key, bad base URL, unknown provider
};
const char* to_string(ErrorKind kind);

class LlmError : public std::runtime_error {
 public:
  LlmError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Incremental text as it streams; called on the calling thread, in order.
using StreamSink = std::function<void(const std::string& delta)>;
using CancelFlag = std::function<bool()>;  // true: stop now (checked between chunks / retries)

class Client {
 public:
  virtual ~Client() = default;
  // Blocks until the whole answer arrived (the sink has seen every delta) or throws LlmError.
  virtual ChatResponse complete(const ChatRequest& request, const StreamSink& sink = {},
                                const CancelFlag& cancelled = {}) = 0;
  virtual std::string describe() const = 0;  // "openai gpt-4o @ https://api.openai.com/v1"
};

}  // namespace mk::llm
