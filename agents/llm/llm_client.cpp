#include "agents/llm/llm_client.h"

namespace mk::llm {

Usage& Usage::operator+=(const Usage& other) {
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  cached_input_tokens += other.cached_input_tokens;
  cost_usd += other.cost_usd;
  return *this;
}

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::BadKey:
      return "bad-key";
    case ErrorKind::ModelNotFound:
      return "model-not-found";
    case ErrorKind::ContextTooLong:
      return "context-too-long";
    case ErrorKind::Refused:
      return "refused";
    case ErrorKind::RateLimited:
      return "rate-limited";
    case ErrorKind::ServerError:
      return "server-error";
    case ErrorKind::Network:
      return "network";
    case ErrorKind::Malformed:
      return "malformed";
    case ErrorKind::Cancelled:
      return "cancelled";
    case ErrorKind::BudgetExceeded:
      return "budget-exceeded";
    case ErrorKind::Config:
      return "config";
  }
  return "?";
}

}  // namespace mk::llm
