// The pieces without a server: SSE parsing, Retry-After, backoff, redaction, the --llm spec,
// the price table.
#include <gtest/gtest.h>

#include <thread>

#include "agents/llm/pricing.h"
#include "agents/llm/provider_config.h"
#include "agents/llm/redact.h"
#include "agents/llm/retry.h"
#include "agents/llm/sse_parser.h"

namespace mk::llm {
namespace {

using std::chrono::milliseconds;

std::vector<SseEvent> parse_in_pieces(const std::string& stream, size_t piece) {
  std::vector<SseEvent> events;
  SseParser parser([&](const SseEvent& event) { events.push_back(event); });
  for (size_t i = 0; i < stream.size(); i += piece)
    parser.feed(std::string_view(stream).substr(i, piece));
  parser.finish();
  return events;
}

TEST(SseParser, SameEventsWhereverTheChunksSplit) {
  const std::string stream =
      ": keep-alive comment\r\n"
      "event: message_start\r\ndata: {\"a\":1}\r\n\r\n"
      "data: first line\ndata: second line\n\n"
      "event: ping\ndata:{}\n\n"
      "id: 7\nretry: 100\n\n"  // no data: no event
      "data: [DONE]\n\n";
  for (size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
    auto events = parse_in_pieces(stream, piece);
    ASSERT_EQ(events.size(), 4u) << "piece " << piece;
    EXPECT_EQ(events[0].event, "message_start");
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[1].event, "");
    EXPECT_EQ(events[1].data, "first line\nsecond line");
    EXPECT_EQ(events[2].event, "ping");
    EXPECT_EQ(events[2].data, "{}");
    EXPECT_EQ(events[3].data, "[DONE]");
  }
}

TEST(SseParser, UnterminatedLastEventIsDeliveredAtFinish) {
  auto events = parse_in_pieces("data: tail", 4);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "tail");
}

TEST(RetryAfter, SecondsAndHttpDates) {
  EXPECT_EQ(parse_retry_after("7"), milliseconds(7000));
  EXPECT_EQ(parse_retry_after(" 0.25 "), milliseconds(250));
  auto now = std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:49 GMT", now), milliseconds(12000));
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now), milliseconds(0));
  EXPECT_FALSE(parse_retry_after("soon"));
  EXPECT_FALSE(parse_retry_after(""));
  EXPECT_FALSE(parse_retry_after("5s"));
  EXPECT_FALSE(parse_retry_after("Sun, 06 Nov 1994 08:49:49 PST"));
}

TEST(Backoff, FullJitterWithinTheDoublingCap) {
  RetryPolicy policy;
  policy.base_delay = milliseconds(100);
  policy.max_delay = milliseconds(1000);
  std::mt19937_64 rng(42);
  for (int attempt = 1; attempt <= 8; ++attempt) {
    milliseconds cap = std::min(milliseconds(100 << (attempt - 1)), milliseconds(1000));
    milliseconds largest{0};
    for (int i = 0; i < 200; ++i) {
      milliseconds delay = backoff_delay(policy, attempt, rng);
      EXPECT_GE(delay.count(), 0);
      EXPECT_LE(delay, cap);
      largest = std::max(largest, delay);
    }
    EXPECT_GT(largest, cap / 2);  // jitter spreads over the whole range
  }
}

TEST(Backoff, WaitEndsWhenCancelled) {
  std::atomic<bool> stop{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(50));
    stop = true;
  });
  auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(wait_unless_cancelled(milliseconds(10'000), [&] { return stop.load(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(1000));
  canceller.join();
  EXPECT_TRUE(wait_unless_cancelled(milliseconds(5), {}));
}

TEST(Redact, SecretsAndKeyShapedTokens) {
  EXPECT_EQ(redact("key=abc123secret here", {"abc123secret"}), "key=[REDACTED] here");
  EXPECT_EQ(redact("Incorrect API key provided: sk-PLANT*****-123.", {}),
            "Incorrect API key provided: [REDACTED].");
  EXPECT_EQ(redact("x-goog-api-key AIzaSyD3adb33fK3yV4lu3", {}), "x-goog-api-key [REDACTED]");
  EXPECT_EQ(redact("sk-ant-api03-abcDEF_123", {}), "[REDACTED]");
  // Words that merely contain the letters are left alone.
  EXPECT_EQ(redact("task-list and disk-usage", {}), "task-list and disk-usage");
  EXPECT_EQ(redact("nothing here", {"", "zzz"}), "nothing here");
}

TEST(LlmSpec, AcceptedForms) {
  EXPECT_FALSE(parse_llm_spec("none"));
  auto replay = parse_llm_spec("replay:tests/llm/fixtures/openai.json");
  ASSERT_TRUE(replay);
  EXPECT_EQ(replay->replay_fixture, "tests/llm/fixtures/openai.json");
  auto openai = parse_llm_spec("openai:gpt-4o");
  ASSERT_TRUE(openai);
  EXPECT_EQ(openai->kind, ProviderKind::OpenAI);
  EXPECT_EQ(openai->model, "gpt-4o");
  EXPECT_EQ(openai->base_url, "");
  auto local = parse_llm_spec("openai:qwen2.5-coder@http://localhost:8000/v1");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->model, "qwen2.5-coder");
  EXPECT_EQ(local->base_url, "http://localhost:8000/v1");
  EXPECT_EQ(parse_llm_spec("gemini:gemini-2.5-pro")->kind, ProviderKind::Gemini);
  EXPECT_EQ(parse_llm_spec("anthropic:claude-sonnet-4-20250514")->model,
            "claude-sonnet-4-20250514");
}

TEST(LlmSpec, RejectedFormsSayWhatIsAccepted) {
  for (const char* spec : {"", "gpt-4o", "mistral:large", "openai:", "gemini:m@http://x",
                           "openai:m@ftp://host", "replay:"}) {
    try {
      parse_llm_spec(spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const LlmError& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Config) << spec;
      EXPECT_GT(std::string(error.what()).size(), 10u);
    }
  }
}

TEST(PriceTable, DefaultsPrefixesAndOverrides) {
  PriceTable table = PriceTable::defaults();
  auto exact = table.find("gpt-4o");
  auto dated = table.find("gpt-4o-2024-08-06");
  ASSERT_TRUE(exact && dated);
  EXPECT_EQ(exact->input_per_million, dated->input_per_million);
  // The longest prefix wins: gpt-4o-mini is not priced as gpt-4o.
  EXPECT_LT(table.find("gpt-4o-mini-2024-07-18")->input_per_million, exact->input_per_million);
  EXPECT_FALSE(table.find("my-local-llama"));
  Usage usage;
  usage.input_tokens = 1'000'000;
  usage.output_tokens = 10;
  EXPECT_EQ(table.cost_usd("my-local-llama", usage), 0);

  table.merge_json(R"({"models": {"my-local-llama": {"input": 1.0, "output": 2.0}}})", "test");
  usage.cached_input_tokens = 500'000;
  // No cached price given: cached tokens cost the input price.
  EXPECT_NEAR(table.cost_usd("my-local-llama", usage), 1.0 + 20.0 / 1e6, 1e-12);
  EXPECT_THROW(table.merge_json(R"({"models": {"x": {"input": -1, "output": 1}}})", "t"), LlmError);
  EXPECT_THROW(table.merge_json("[1,2]", "t"), LlmError);
  EXPECT_THROW(table.merge_file("/nonexistent/prices.json"), LlmError);
}

TEST(ErrorKinds, HaveNames) {
  EXPECT_STREQ(to_string(ErrorKind::BudgetExceeded), "budget-exceeded");
  EXPECT_STREQ(to_string(ProviderKind::Anthropic), "anthropic");
  EXPECT_EQ(default_api_key_env(ProviderKind::Gemini), "GEMINI_API_KEY");
}

}  // namespace
}  // namespace mk::llm
