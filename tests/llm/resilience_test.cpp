// Timeouts, resets, cancellation while waiting to retry, budget, record/replay, and keeping the
// API key out of logs, errors, describe() and recorded fixtures.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "agents/llm/budget.h"
#include "llm_test_util.h"

namespace mk::llm::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A listening socket whose accept queue is full: connects to it hang in SYN-SENT.
class FullBacklog {
 public:
  FullBacklog() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length);
    ::listen(listener_, 0);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    for (int i = 0; i < 3; ++i) {  // fill the queue (backlog 0 admits one or two)
      int client = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(client, reinterpret_cast<sockaddr*>(&address), length);
      fillers_.push_back(client);
    }
  }
  ~FullBacklog() {
    for (int fd : fillers_) ::close(fd);
    ::close(listener_);
  }
  int port() const { return port_; }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::vector<int> fillers_;
};

TEST(LlmResilience, ConnectTimeout) {
  FullBacklog backlog;
  ProviderConfig config = Replay::defaults();
  config.kind = ProviderKind::OpenAI;
  config.model = "gpt-4o-mini";
  config.base_url = "http://127.0.0.1:" + std::to_string(backlog.port()) + "/v1";
  config.connect_timeout = std::chrono::milliseconds(300);
  config.retry.max_attempts = 2;
  auto client = make_client(config);
  auto started = Clock::now();
  try {
    client->complete(simple_request(false));
    FAIL() << "expected a connect timeout";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Network);
    EXPECT_NE(std::string(error.what()).find("no connection within 300 ms"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("after 2 attempts"), std::string::npos);
  }
  auto elapsed = Clock::now() - started;
  EXPECT_GE(elapsed, std::chrono::milliseconds(600));
  EXPECT_LT(elapsed, std::chrono::milliseconds(3000));
}

TEST(LlmResilience, ConnectionRefused) {
  int port = 0;
  {
    FullBacklog closed_soon;  // a port that was just free; nothing listens once it is closed
    port = closed_soon.port();
  }
  ProviderConfig config = Replay::defaults();
  config.kind = ProviderKind::Anthropic;
  config.model = "claude-sonnet-4-20250514";
  config.base_url = "http://127.0.0.1:" + std::to_string(port);
  config.retry.max_attempts = 2;
  auto client = make_client(config);
  try {
    client->complete(simple_request(true));
    FAIL() << "expected a connection error";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Network);
    EXPECT_NE(std::string(error.what()).find("cannot connect"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("after 2 attempts"), std::string::npos);
  }
}

TEST(LlmResilience, TotalTimeoutOnAHangingServer) {
  ProviderConfig settings = Replay::defaults();
  settings.total_timeout = std::chrono::milliseconds(400);
  settings.retry.max_attempts = 1;
  Replay replay("anthropic", {{"ok"}}, settings);
  replay.fault({{"type", "hang"}, {"seconds", 30}});
  auto started = Clock::now();
  try {
    replay.client().complete(simple_request(true));
    FAIL() << "expected a timeout";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Network);
    EXPECT_NE(std::string(error.what()).find("no complete answer within 400 ms"), std::string::npos)
        << error.what();
  }
  auto elapsed = Clock::now() - started;
  EXPECT_GE(elapsed, std::chrono::milliseconds(350));  // libcurl's clock may fire a hair early
  EXPECT_LT(elapsed, std::chrono::milliseconds(2000));
}

TEST(LlmResilience, ConnectionResetIsRetried) {
  Replay replay("openai", {{"ok"}});
  replay.fault({{"type", "reset"}, {"count", 2}});
  ChatResponse response = replay.client().complete(simple_request(true));
  EXPECT_EQ(response.text, kAnswer);
  EXPECT_EQ(response.attempts, 3);
  json log = replay.log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0]["fault"], "reset");
  EXPECT_EQ(log[2]["fault"], nullptr);
}

TEST(LlmResilience, CancelWhileWaitingForRetryAfter) {
  Replay replay("gemini", {{"ok"}});
  replay.fault({{"type", "rate_limit"}, {"retry_after", 30}});
  std::atomic<bool> stop{false};
  std::thread canceller([&] {
    // Cancel once the 429 has been answered, i.e. while the client waits its 30 s.
    for (int i = 0; i < 500 && replay.log().empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stop = true;
  });
  auto started = Clock::now();
  try {
    replay.client().complete(simple_request(false), {}, [&] { return stop.load(); });
    ADD_FAILURE() << "expected cancellation";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Cancelled) << error.what();
  }
  canceller.join();
  EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(3000));
}

TEST(LlmResilience, RetryAfterLongerThanTheCapGivesUp) {
  ProviderConfig settings = Replay::defaults();
  settings.retry.max_retry_after = std::chrono::milliseconds(5000);
  Replay replay("openai", {{"ok"}}, settings);
  replay.fault({{"type", "rate_limit"}, {"retry_after", 3600}});
  try {
    replay.client().complete(simple_request(false));
    FAIL() << "expected a rate-limit error";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::RateLimited);
    EXPECT_NE(std::string(error.what()).find("3600 s"), std::string::npos) << error.what();
  }
  EXPECT_EQ(replay.log().size(), 1u);
}

TEST(LlmResilience, BudgetRefusesTheNextCall) {
  ProviderConfig settings = Replay::defaults();
  settings.budget = std::make_shared<Budget>(1000, std::nullopt);
  Replay replay("openai", {{"ok"}, {"ok"}}, settings);
  ChatResponse first = replay.client().complete(simple_request(false));
  EXPECT_EQ(settings.budget->spent().input_tokens, first.usage.input_tokens);
  EXPECT_TRUE(settings.budget->exhausted());
  try {
    replay.client().complete(simple_request(false));
    FAIL() << "expected BudgetExceeded";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BudgetExceeded);
    EXPECT_NE(std::string(error.what()).find("1242 of 1000 tokens"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(replay.log().size(), 1u);  // the refused call never went out
}

TEST(LlmResilience, BudgetInDollarsAcrossThreads) {
  auto budget = std::make_shared<Budget>(std::nullopt, 0.01);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        Usage usage;
        usage.input_tokens = 1;
        usage.cost_usd = 0.000001;
        budget->charge(usage);
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(budget->spent().input_tokens, 4000);
  EXPECT_NEAR(budget->spent().cost_usd, 0.004, 1e-9);
  EXPECT_FALSE(budget->exhausted());
  Usage big;
  big.cost_usd = 0.006;
  budget->charge(big);
  EXPECT_THROW(budget->check_available(), LlmError);
}

TEST(LlmResilience, RecordThenReplayRoundTrip) {
  std::string recorded = temp_path("recorded.json");
  ProviderConfig settings = Replay::defaults();
  settings.record_path = recorded;
  {
    Replay live("anthropic", {{"rate_limited"}, {"ok"}, {"ok"}}, settings);
    live.client().complete(simple_request(false, "planner"));  // 429, then the plain answer
    live.client().complete(simple_request(true, "implementer"));
  }
  json fixture = json::parse(read_file(recorded));
  EXPECT_EQ(fixture["provider"], "anthropic");
  ASSERT_EQ(fixture["entries"].size(), 3u);
  EXPECT_EQ(fixture["entries"][0]["status"], 429);
  EXPECT_EQ(fixture["entries"][0]["headers"]["retry-after"], "1");
  EXPECT_TRUE(fixture["entries"][2].contains("chunks"));

  // The recording serves the same answers through --llm replay:FILE.
  ProviderConfig replay_settings = Replay::defaults();
  auto client = make_client_for_spec("replay:" + recorded, replay_settings);
  ASSERT_TRUE(client);
  EXPECT_NE(client->describe().find("replay " + recorded), std::string::npos);
  ChatResponse plain = client->complete(simple_request(false, "planner"));
  EXPECT_EQ(plain.text, kAnswer);
  EXPECT_EQ(plain.attempts, 2);  // the recorded 429 is replayed too
  std::vector<std::string> deltas;
  ChatResponse streamed = client->complete(simple_request(true, "implementer"),
                                           [&](const std::string& d) { deltas.push_back(d); });
  EXPECT_EQ(streamed.text, kAnswer);
  EXPECT_GE(deltas.size(), 3u);
  EXPECT_EQ(streamed.usage.cached_input_tokens, 1024);
}

TEST(LlmResilience, ErrorEventInsideAStreamIsRetried) {
  json fixture = load_fixture("anthropic");
  json ok = fixture["entries"][0];
  json overloaded = ok;
  overloaded["chunks"] = {
      ok["chunks"][0],
      "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", "
      "\"message\": \"Overloaded\"}}\n\n"};
  fixture["entries"] = {overloaded, ok};
  std::string path = temp_path("stream_error.json");
  std::ofstream(path) << fixture.dump();
  auto client = make_client_for_spec("replay:" + path, Replay::defaults());
  ChatResponse response = client->complete(simple_request(true));
  EXPECT_EQ(response.text, kAnswer);
  EXPECT_EQ(response.attempts, 2);
}

TEST(LlmResilience, ReplayMatchesByPurpose) {
  json fixture = load_fixture("openai");
  json entries = json::array();
  json reviewer = fixture["entries"][0];
  reviewer["match"] = {{"purpose", "reviewer"}};
  reviewer["body"]["choices"][0]["message"]["content"] = "for the reviewer";
  entries.push_back(reviewer);
  entries.push_back(fixture["entries"][0]);
  fixture["entries"] = entries;
  std::string path = temp_path("match.json");
  std::ofstream(path) << fixture.dump();
  auto client = make_client_for_spec("replay:" + path, Replay::defaults());
  EXPECT_EQ(client->complete(simple_request(false, "planner")).text, kAnswer);
  EXPECT_EQ(client->complete(simple_request(false, "reviewer")).text, "for the reviewer");
  try {
    client->complete(simple_request(false, "planner"));
    FAIL() << "the fixture is used up";
  } catch (const LlmError& error) {
    EXPECT_NE(std::string(error.what()).find("no unused fixture entry"), std::string::npos)
        << error.what();
  }
}

// The planted key never shows in a log line, an error, describe(), a recording, or anything
// sent to the server other than the auth header, even when the provider echoes it back.
TEST(LlmResilience, PlantedKeyNeverLeaks) {
  CapturedLogs logs;
  std::string recorded = temp_path("leak.json");
  json fixture = load_fixture("openai");
  json echo = fixture["entries"][3];  // bad_key
  echo["body"]["error"]["message"] = std::string("Incorrect API key provided: ") + kPlantedKey +
                                     ". You can find your API key at https://platform.openai.com.";
  json partial = echo;
  partial["body"]["error"]["message"] = "Incorrect API key provided: sk-PLANT*****123.";
  fixture["entries"] = {fixture["entries"][1], fixture["entries"][0], echo, partial};
  std::string path = temp_path("leak_source.json");
  std::ofstream(path) << fixture.dump();

  ProviderConfig settings = Replay::defaults();
  settings.record_path = recorded;
  ReplayServer server("python3", path);
  settings.kind = ProviderKind::OpenAI;
  settings.model = "gpt-4o-mini";
  settings.base_url = server.base_url() + "/v1/";
  auto client = make_client(settings);
  std::vector<std::string> texts{client->describe()};
  client->complete(simple_request(true));  // 429 then ok: retry warnings are logged
  for (int i = 0; i < 2; ++i) {
    try {
      client->complete(simple_request(false));
      ADD_FAILURE() << "expected BadKey";
    } catch (const LlmError& error) {
      EXPECT_EQ(error.kind(), ErrorKind::BadKey);
      texts.push_back(error.what());
    }
  }
  for (const std::string& line : logs.lines()) texts.push_back(line);
  texts.push_back(read_file(recorded));
  EXPECT_GT(logs.lines().size(), 2u);
  for (const std::string& text : texts) {
    EXPECT_EQ(text.find("PLANTED"), std::string::npos) << text;
    EXPECT_EQ(text.find("PLANT*"), std::string::npos) << text;
  }
  json log = json::parse(http_get(server.base_url() + "/_log"));
  ASSERT_EQ(log.size(), 4u);
  for (const json& request : log) {
    EXPECT_EQ(request["headers"]["authorization"], std::string("Bearer ") + kPlantedKey);
    json rest = request;
    rest["headers"].erase("authorization");
    EXPECT_EQ(rest.dump().find("PLANTED"), std::string::npos) << rest.dump();
  }
}

TEST(LlmResilience, MissingKeyNamesTheVariable) {
  ProviderConfig config;
  config.kind = ProviderKind::Gemini;
  config.model = "gemini-2.5-flash";
  config.api_key_env = "MK_TEST_SURELY_UNSET_KEY";
  try {
    make_client(config);
    FAIL() << "expected a Config error";
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Config);
    EXPECT_NE(std::string(error.what()).find("MK_TEST_SURELY_UNSET_KEY"), std::string::npos);
  }
}

TEST(LlmResilience, ReplaySpecErrors) {
  EXPECT_EQ(make_client_for_spec("none"), nullptr);
  try {
    make_client_for_spec("replay:/nonexistent/fixture.json");
    FAIL();
  } catch (const LlmError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Config);
    EXPECT_NE(std::string(error.what()).find("/nonexistent/fixture.json"), std::string::npos);
  }
  std::string bad = temp_path("bad.json");
  std::ofstream(bad) << "{\"entries\": []}";
  EXPECT_THROW(make_client_for_spec("replay:" + bad), LlmError);
}

}  // namespace
}  // namespace mk::llm::test
