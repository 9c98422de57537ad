// Each provider format against the replay server over real loopback HTTP: answers, streaming,
// error kinds, retries, cancellation, usage and cost.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "agents/llm/pricing.h"
#include "llm_test_util.h"

namespace mk::llm::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

class ProviderTest : public testing::TestWithParam<std::string> {
 protected:
  std::string provider() const { return GetParam(); }

  // The error a call throws, or a failure when it does not throw.
  static LlmError call_error(Client& client, const ChatRequest& request) {
    try {
      client.complete(request);
    } catch (const LlmError& error) {
      return error;
    }
    ADD_FAILURE() << "the call did not fail";
    return LlmError(ErrorKind::Config, "no error");
  }
};

TEST_P(ProviderTest, PlainAnswerWithUsageAndCost) {
  Replay replay(provider(), {{"ok"}});
  ChatResponse response = replay.client().complete(simple_request(false));
  EXPECT_EQ(response.text, kAnswer);
  EXPECT_EQ(response.finish_reason, "stop");
  EXPECT_EQ(response.attempts, 1);
  // Every fixture bills 1200 prompt tokens of which 1024 cached, and 42 output tokens (Gemini:
  // 22 candidate + 20 thinking tokens; Anthropic: 176 uncached + 1024 cache reads).
  EXPECT_EQ(response.usage.input_tokens, 1200);
  EXPECT_EQ(response.usage.cached_input_tokens, 1024);
  EXPECT_EQ(response.usage.output_tokens, 42);
  auto price = PriceTable::defaults().find(replay.config().model);
  ASSERT_TRUE(price.has_value());
  double expected = (176 * price->input_per_million + 1024 * price->cached_input_per_million +
                     42 * price->output_per_million) /
                    1e6;
  EXPECT_NEAR(response.usage.cost_usd, expected, 1e-12);
  EXPECT_GT(response.usage.cost_usd, 0);

  json log = replay.log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_FALSE(log[0]["stream"].get<bool>());
  EXPECT_EQ(log[0]["purpose"], "planner");
  json body = json::parse(log[0]["body"].get<std::string>());
  EXPECT_NE(body.dump().find("Which block shape"), std::string::npos);
}

TEST_P(ProviderTest, StreamDeliversDeltasIncrementally) {
  Replay replay(provider(), {{"ok", {{"type", "slow"}, {"chunk_delay_ms", 40}}}});
  std::vector<std::pair<std::string, Clock::time_point>> deltas;
  ChatResponse response = replay.client().complete(
      simple_request(true),
      [&](const std::string& delta) { deltas.emplace_back(delta, Clock::now()); });
  auto finished = Clock::now();
  EXPECT_EQ(response.text, kAnswer);
  ASSERT_GE(deltas.size(), 3u);
  std::string joined;
  for (const auto& [delta, when] : deltas) joined += delta;
  EXPECT_EQ(joined, kAnswer);
  // The first delta reached the sink while later events were still on their way.
  EXPECT_GE(finished - deltas.front().second, std::chrono::milliseconds(80));
  EXPECT_EQ(response.usage.input_tokens, 1200);
  EXPECT_EQ(response.usage.output_tokens, 42);
  EXPECT_TRUE(replay.log()[0]["stream"].get<bool>());
}

TEST_P(ProviderTest, RateLimitHonoursRetryAfter) {
  Replay replay(provider(), {{"rate_limited"}, {"ok"}});
  auto started = Clock::now();
  ChatResponse response = replay.client().complete(simple_request(true));
  auto waited = Clock::now() - started;
  EXPECT_EQ(response.text, kAnswer);
  EXPECT_EQ(response.attempts, 2);
  EXPECT_EQ(replay.log().size(), 2u);
  EXPECT_GE(waited, std::chrono::milliseconds(1000));  // the fixture's Retry-After: 1
}

TEST_P(ProviderTest, ServerErrorThenSuccess) {
  Replay replay(provider(), {{"server_error"}, {"ok"}});
  ChatResponse response = replay.client().complete(simple_request(false));
  EXPECT_EQ(response.text, kAnswer);
  EXPECT_EQ(response.attempts, 2);
}

TEST_P(ProviderTest, ServerErrorsExhaustAttempts) {
  Replay replay(provider(), {{"server_error"}, {"server_error"}, {"server_error"}, {"ok"}});
  LlmError error = call_error(replay.client(), simple_request(false));
  EXPECT_EQ(error.kind(), ErrorKind::ServerError);
  EXPECT_NE(std::string(error.what()).find("after 3 attempts"), std::string::npos) << error.what();
  EXPECT_EQ(replay.log().size(), 3u);
}

TEST_P(ProviderTest, StreamCutAfterTextIsAClearError) {
  // Cut after the first text event: OpenAI opens with a role-only chunk, Anthropic with
  // message_start, content_block_start and ping.
  int cut = provider() == "openai" ? 2 : provider() == "gemini" ? 1 : 4;
  Replay replay(provider(), {{"ok", {{"type", "truncate"}, {"after_chunks", cut}}}, {"ok"}});
  std::string seen;
  try {
    replay.client().complete(simple_request(true),
                             [&](const std::string& delta) { seen += delta; });
    FAIL() << "a truncated stream must not pass as an answer";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Network) << error.what();
  }
  EXPECT_FALSE(seen.empty());
  EXPECT_EQ(replay.log().size(), 1u);  // text already reached the sink: no silent retry
}

TEST_P(ProviderTest, StreamCutBeforeTextIsRetried) {
  Replay replay(provider(), {{"ok", {{"type", "truncate"}, {"after_chunks", 0}}}, {"ok"}});
  ChatResponse response = replay.client().complete(simple_request(true));
  EXPECT_EQ(response.text, kAnswer);
  EXPECT_EQ(response.attempts, 2);
}

TEST_P(ProviderTest, MalformedBody) {
  Replay replay(provider(), {{"malformed"}, {"ok"}});
  LlmError error = call_error(replay.client(), simple_request(false));
  EXPECT_EQ(error.kind(), ErrorKind::Malformed) << error.what();
  EXPECT_EQ(replay.log().size(), 1u);
}

TEST_P(ProviderTest, MalformedBodyWhereAStreamWasExpected) {
  Replay replay(provider(), {{"ok"}});
  replay.fault({{"type", "malformed"}});
  LlmError error = call_error(replay.client(), simple_request(true));
  EXPECT_EQ(error.kind(), ErrorKind::Malformed) << error.what();
}

TEST_P(ProviderTest, BadKeyNamesTheVariable) {
  std::string variable = "MK_TEST_" + provider() + "_KEY";
  ::setenv(variable.c_str(), kPlantedKey, 1);
  ProviderConfig settings = Replay::defaults();
  settings.api_key.reset();
  settings.api_key_env = variable;
  Replay replay(provider(), {{"bad_key"}}, settings);
  LlmError error = call_error(replay.client(), simple_request(false));
  EXPECT_EQ(error.kind(), ErrorKind::BadKey);
  EXPECT_NE(std::string(error.what()).find(variable), std::string::npos) << error.what();
  EXPECT_EQ(std::string(error.what()).find(kPlantedKey), std::string::npos);
  EXPECT_EQ(replay.log().size(), 1u);  // never retried
  ::unsetenv(variable.c_str());
}

TEST_P(ProviderTest, UnknownModelNamesIt) {
  Replay replay(provider(), {{"model_not_found"}});
  LlmError error = call_error(replay.client(), simple_request(false));
  EXPECT_EQ(error.kind(), ErrorKind::ModelNotFound);
  EXPECT_NE(std::string(error.what()).find("'" + replay.config().model + "'"), std::string::npos)
      << error.what();
}

TEST_P(ProviderTest, ContextTooLong) {
  Replay replay(provider(), {{"context_too_long"}});
  LlmError error = call_error(replay.client(), simple_request(true));
  EXPECT_EQ(error.kind(), ErrorKind::ContextTooLong) << error.what();
}

TEST_P(ProviderTest, RefusalPlainAndStreamed) {
  Replay replay(provider(), {{"refusal"}, {"refusal"}});
  EXPECT_EQ(call_error(replay.client(), simple_request(false)).kind(), ErrorKind::Refused);
  LlmError streamed = call_error(replay.client(), simple_request(true));
  EXPECT_EQ(streamed.kind(), ErrorKind::Refused) << streamed.what();
}

TEST_P(ProviderTest, CancelMidStreamReturnsPromptly) {
  Replay replay(provider(), {{"ok", {{"type", "slow"}, {"chunk_delay_ms", 2000}}}});
  std::atomic<bool> stop{false};
  Clock::time_point flipped;
  // The first event arrives after 2 s; cancel 100 ms into the wait for the next one.
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    flipped = Clock::now();
    stop = true;
  });
  try {
    replay.client().complete(simple_request(true), {}, [&] { return stop.load(); });
    ADD_FAILURE() << "the call was not cancelled";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Cancelled);
  }
  auto returned = Clock::now();
  canceller.join();
  EXPECT_LT(returned - flipped, std::chrono::milliseconds(500));
}

TEST_P(ProviderTest, CancelAfterFirstDelta) {
  Replay replay(provider(), {{"ok", {{"type", "slow"}, {"chunk_delay_ms", 300}}}});
  bool stop = false;
  int deltas = 0;
  auto started = Clock::now();
  try {
    replay.client().complete(
        simple_request(true),
        [&](const std::string&) {
          ++deltas;
          stop = true;
        },
        [&] { return stop; });
    ADD_FAILURE() << "the call was not cancelled";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Cancelled);
  }
  EXPECT_EQ(deltas, 1);
  // Far less than the whole slow stream (>= 2.1 s).
  EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(1500));
}

std::string format_name(const testing::TestParamInfo<std::string>& param) {
  return param.param;
}

INSTANTIATE_TEST_SUITE_P(Formats, ProviderTest, testing::Values("openai", "gemini", "anthropic"),
                         format_name);

}  // namespace
}  // namespace mk::llm::test
