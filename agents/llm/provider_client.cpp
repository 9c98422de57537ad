#include "agents/llm/provider_client.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "agents/llm/http_transport.h"
#include "agents/llm/redact.h"
#include "agents/llm/retry.h"
#include "agents/llm/wire_format.h"

namespace mk::llm {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {

bool retryable_kind(ErrorKind kind) {
  return kind == ErrorKind::RateLimited || kind == ErrorKind::ServerError ||
         kind == ErrorKind::Network;
}

std::string serialise_event(const SseEvent& event) {
  std::string text;
  if (!event.event.empty()) text += "event: " + event.event + "\n";
  size_t start = 0;
  while (true) {
    size_t end = event.data.find('\n', start);
    text += "data: " + event.data.substr(start, end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return text + "\n";
}

std::string url_path(const std::string& url) {
  size_t scheme = url.find("://");
  size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? "/" : url.substr(slash);
}

std::unique_ptr<WireFormat> make_wire(const ProviderConfig& config, const std::string& key) {
  switch (config.kind) {
    case ProviderKind::OpenAI:
      return make_openai_wire(config, key);
    case ProviderKind::Gemini:
      return make_gemini_wire(config, key);
    case ProviderKind::Anthropic:
      return make_anthropic_wire(config, key);
  }
  throw LlmError(ErrorKind::Config, "unknown provider");
}

}  // namespace

ErrorKind kind_of_stream_error(const std::string& type) {
  if (type == "rate_limit_error" || type == "rate_limit_exceeded" || type == "RESOURCE_EXHAUSTED" ||
      type == "requests" || type == "tokens" || type == "insufficient_quota")
    return ErrorKind::RateLimited;
  if (type == "authentication_error" || type == "permission_error" || type == "invalid_api_key" ||
      type == "UNAUTHENTICATED" || type == "PERMISSION_DENIED")
    return ErrorKind::BadKey;
  if (type == "not_found_error" || type == "model_not_found" || type == "NOT_FOUND")
    return ErrorKind::ModelNotFound;
  if (type == "invalid_request_error" || type == "INVALID_ARGUMENT") return ErrorKind::Config;
  return ErrorKind::ServerError;  // overloaded_error, api_error, server_error, UNAVAILABLE, ...
}

struct ProviderClient::Attempt {
  bool ok = false;
  Answer answer;
  std::optional<LlmError> error;
  bool retryable = false;
  std::optional<milliseconds> retry_after;
};

ProviderClient::ProviderClient(ProviderConfig config, std::string api_key)
    : config_(std::move(config)),
      api_key_(std::move(api_key)),
      wire_(make_wire(config_, api_key_)),
      prices_(config_.prices ? config_.prices
                             : std::make_shared<const PriceTable>(PriceTable::defaults())),
      rng_(std::random_device{}()) {
  if (!config_.record_path.empty())
    recorder_ =
        std::make_unique<FixtureRecorder>(config_.record_path, to_string(config_.kind),
                                          config_.model, std::vector<std::string>{api_key_});
}

ProviderClient::~ProviderClient() = default;

std::string ProviderClient::clean(const std::string& text) const {
  return redact(text, {api_key_});
}

std::string ProviderClient::describe() const {
  return clean(std::string(to_string(config_.kind)) + " " + config_.model + " @ " +
               config_.base_url);
}

LlmError ProviderClient::error_for_status(int status, const std::string& body_text) const {
  json body = json::parse(body_text, nullptr, false);
  std::string detail;
  if (!body.is_discarded() && body.is_object() && body.contains("error") &&
      body["error"].is_object() && body["error"].contains("message") &&
      body["error"]["message"].is_string())
    detail = body["error"]["message"].get<std::string>();
  else
    detail = body_text.substr(0, 300);
  std::string provider = to_string(config_.kind);
  std::string http = "HTTP " + std::to_string(status) + (detail.empty() ? "" : ": " + detail);
  // Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
  bool key_rejected = status == 401 || status == 403 ||
                      (status == 400 && body_text.find("API_KEY_INVALID") != std::string::npos);
  if (key_rejected) {
    std::string where = config_.api_key ? "check the " + provider + " key stored in the editor"
                                        : "check the environment variable " + config_.api_key_env;
    return LlmError(ErrorKind::BadKey,
                    clean(provider + " rejected the API key (" + http + "); " + where));
  }
  if (status == 404)
    return LlmError(ErrorKind::ModelNotFound,
                    clean(provider + " has no model '" + config_.model + "' at " +
                          config_.base_url + " (" + http + "); check the model name"));
  if (status == 429)
    return LlmError(ErrorKind::RateLimited, clean(provider + " is rate limiting (" + http + ")"));
  if (status >= 500)
    return LlmError(ErrorKind::ServerError, clean(provider + " server error (" + http + ")"));
  if (wire_->context_too_long(status, body))
    return LlmError(ErrorKind::ContextTooLong,
                    clean("the prompt does not fit the context window of " + config_.model + " (" +
                          http + "); shorten it"));
  return LlmError(ErrorKind::Config, clean(provider + " rejected the request (" + http + ")"));
}

ProviderClient::Attempt ProviderClient::attempt_once(const ChatRequest& request,
                                                     const StreamSink& sink,
                                                     const CancelFlag& cancelled, int attempt) {
  WireRequest wire = wire_->build(request);
  HttpRequest http;
  http.url = wire.url;
  http.headers = std::move(wire.headers);
  if (!request.purpose.empty()) http.headers.emplace_back("X-MaxKernel-Purpose", request.purpose);
  http.body = wire.body.dump();
  http.connect_timeout = config_.connect_timeout;
  http.total_timeout = config_.total_timeout;

  Attempt out;
  std::vector<std::string> events;
  std::string raw;  // a streamed body, in case the server answered plain JSON instead of SSE
  SseParser parser([&](const SseEvent& event) {
    events.push_back(serialise_event(event));
    wire_->read_event(event, out.answer, sink);
  });
  ChunkHandler on_chunk;
  if (request.stream)
    on_chunk = [&](std::string_view bytes) {
      if (events.empty()) raw.append(bytes);
      parser.feed(bytes);
    };

  spdlog::debug("{}", clean(fmt::format("llm {} {} attempt {}: POST {}", to_string(config_.kind),
                                        request.purpose, attempt, http.url)));
  HttpResult result = http_post(http, on_chunk, cancelled);
  bool success = result.status >= 200 && result.status < 300;
  if (request.stream && result.transport == TransportStatus::Ok && success) {
    try {
      parser.finish();
    } catch (...) {
      result.handler_error = std::current_exception();
      result.transport = TransportStatus::Aborted;
    }
  }

  json entry = {{"purpose", request.purpose},
                {"endpoint", url_path(http.url)},
                {"stream", request.stream},
                {"request", wire.body}};
  auto fail = [&](LlmError error) {
    out.retryable = retryable_kind(error.kind()) && out.answer.deltas == 0;
    out.error.emplace(std::move(error));
  };

  switch (result.transport) {
    case TransportStatus::Cancelled:
      throw LlmError(ErrorKind::Cancelled, "the LLM call was cancelled");
    case TransportStatus::Aborted:
      try {
        std::rethrow_exception(result.handler_error);
      } catch (const LlmError& error) {
        fail(LlmError(error.kind(), clean(error.what())));
      }  // anything else came from the caller's sink: it propagates
      break;
    case TransportStatus::ConnectTimeout:
    case TransportStatus::Timeout:
    case TransportStatus::ConnectFailed:
    case TransportStatus::Interrupted: {
      std::string what =
          result.transport == TransportStatus::ConnectTimeout
              ? fmt::format("no connection within {} ms", config_.connect_timeout.count())
          : result.transport == TransportStatus::Timeout
              ? fmt::format("no complete answer within {} ms", config_.total_timeout.count())
          : result.transport == TransportStatus::ConnectFailed
              ? "cannot connect (" + result.transport_error + ")"
              : "the connection broke mid-response (" + result.transport_error + ")";
      fail(LlmError(ErrorKind::Network, clean(fmt::format("{} at {}: {}", to_string(config_.kind),
                                                          config_.base_url, what))));
      entry["fault"] = {{"type", result.transport == TransportStatus::Interrupted ||
                                         result.transport == TransportStatus::ConnectFailed
                                     ? "reset"
                                     : "hang"}};
      break;
    }
    case TransportStatus::Ok:
      break;
  }

  if (result.transport == TransportStatus::Ok) {
    entry["status"] = result.status;
    json headers = json::object();
    for (const char* name : {"content-type", "retry-after"})
      if (auto it = result.headers.find(name); it != result.headers.end())
        headers[name] = it->second;
    entry["headers"] = headers;
    if (!success) {
      entry["body"] = result.body;
      fail(error_for_status(result.status, result.body));
      if (auto it = result.headers.find("retry-after"); it != result.headers.end())
        out.retry_after = parse_retry_after(it->second);
    } else {
      std::string plain = request.stream ? raw : result.body;
      bool read_plain = !request.stream || (events.empty() && !plain.empty() &&
                                            (plain.front() == '{' || plain.front() == '['));
      try {
        if (read_plain) {
          json body = json::parse(plain, nullptr, false);
          entry["body"] = body.is_discarded() ? json(plain) : body;
          if (body.is_discarded())
            throw LlmError(ErrorKind::Malformed,
                           std::string(to_string(config_.kind)) +
                               ": the response body is not JSON: " + plain.substr(0, 120));
          wire_->read_body(body, out.answer);
        } else {
          entry["chunks"] = events;
          if (!out.answer.complete)
            throw LlmError(ErrorKind::Network,
                           fmt::format("{}: the stream ended before the answer was complete ({} "
                                       "events received)",
                                       to_string(config_.kind), events.size()));
        }
        out.ok = true;
      } catch (const LlmError& error) {
        fail(LlmError(error.kind(), clean(error.what())));
      }
    }
  } else if (!events.empty()) {
    entry["chunks"] = events;
  }
  if (recorder_) recorder_->add(std::move(entry));
  return out;
}

ChatResponse ProviderClient::complete(const ChatRequest& request, const StreamSink& sink,
                                      const CancelFlag& cancelled) {
  if (config_.budget) config_.budget->check_available();
  auto started = std::chrono::steady_clock::now();
  const int max_attempts = std::max(config_.retry.max_attempts, 1);
  for (int attempt = 1;; ++attempt) {
    if (cancelled && cancelled())
      throw LlmError(ErrorKind::Cancelled, "the LLM call was cancelled");
    Attempt result = attempt_once(request, sink, cancelled, attempt);
    if (result.ok) {
      ChatResponse response;
      response.text = std::move(result.answer.text);
      response.finish_reason = result.answer.finish_reason;
      response.usage = result.answer.usage;
      response.model = result.answer.model.empty() ? config_.model : result.answer.model;
      response.attempts = attempt;
      const std::string& priced = prices_->find(config_.model) ? config_.model : response.model;
      response.usage.cost_usd = prices_->cost_usd(priced, response.usage);
      if (config_.budget) config_.budget->charge(response.usage);
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      spdlog::info(
          "{}", clean(fmt::format("llm {} {} {}: {} in ({} cached) / {} out tokens, ${:.5f}, {} "
                                  "attempt(s), {:.2f} s",
                                  to_string(config_.kind), response.model, request.purpose,
                                  response.usage.input_tokens, response.usage.cached_input_tokens,
                                  response.usage.output_tokens, response.usage.cost_usd, attempt,
                                  seconds)));
      if (response.finish_reason == "content_filter")
        throw LlmError(
            ErrorKind::Refused,
            clean(std::string(to_string(config_.kind)) + " refused to answer (" +
                  (result.answer.refusal.empty() ? "content filter"
                                                 : result.answer.refusal.substr(0, 300)) +
                  ")"));
      return response;
    }
    LlmError& error = *result.error;
    if (!result.retryable || attempt >= max_attempts) {
      std::string message = error.what();
      if (attempt > 1) message += fmt::format(" (after {} attempts)", attempt);
      throw LlmError(error.kind(), message);
    }
    milliseconds delay;
    {
      std::lock_guard<std::mutex> lock(rng_mutex_);
      delay = backoff_delay(config_.retry, attempt, rng_);
    }
    if (result.retry_after) {
      if (*result.retry_after > config_.retry.max_retry_after)
        throw LlmError(error.kind(), fmt::format("{}; the provider asks to wait {} s, longer than "
                                                 "the {} s this client waits",
                                                 error.what(), result.retry_after->count() / 1000,
                                                 config_.retry.max_retry_after.count() / 1000));
      delay = std::max(delay, *result.retry_after);
    }
    spdlog::warn("{}", clean(fmt::format("llm attempt {}/{} failed: {}; retrying in {} ms", attempt,
                                         max_attempts, error.what(), delay.count())));
    if (!wait_unless_cancelled(delay, cancelled))
      throw LlmError(ErrorKind::Cancelled, "the LLM call was cancelled while waiting to retry");
  }
}

}  // namespace mk::llm
