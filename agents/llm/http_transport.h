// One HTTP POST over libcurl: a whole body or a stream of body chunks, timeouts, cancellation.
// No libcurl type appears here; the providers and tests use these plain structs.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agents/llm/llm_client.h"

namespace mk::llm {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{300'000};
};

enum class TransportStatus {
  Ok,              // a complete HTTP response (any status code)
  Cancelled,       // the CancelFlag flipped
  ConnectTimeout,  // no connection within connect_timeout
  Timeout,         // connected, but the whole exchange took longer than total_timeout
  ConnectFailed,   // refused, DNS, unreachable
  Interrupted,     // the connection broke mid-response (reset, truncated chunked body)
  Aborted,         // the chunk handler threw; see HttpResult::handler_error
};

struct HttpResult {
  TransportStatus transport = TransportStatus::Ok;
  std::string transport_error;  // libcurl's words, when transport != Ok
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; the last value wins
  std::string body;  // the whole body, unless a chunk handler consumed a 2xx body
  std::exception_ptr handler_error;
};

// Called with raw body bytes of a 2xx response as they arrive (non-2xx bodies are collected
// into HttpResult::body instead). May throw: the transfer stops and the exception is returned.
using ChunkHandler = std::function<void(std::string_view bytes)>;

// Blocks until the response completed, failed, or `cancelled` returned true (checked every
// ~20 ms, also while connecting or waiting for the first byte).
HttpResult http_post(const HttpRequest& request, const ChunkHandler& on_chunk,
                     const CancelFlag& cancelled);

const char* to_string(TransportStatus status);

}  // namespace mk::llm
