// OutgoingRequests: server-to-client requests, their responses, timeouts and the pending cap.
#include "lsp/protocol/outgoing_requests.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace mk::rpc {
namespace {

using namespace std::chrono_literals;
using Clock = OutgoingRequests::Clock;

// What one callback received.
struct Outcome {
  bool called = false;
  int calls = 0;
  std::optional<json> result;
  std::optional<Error> error;
};

OutgoingRequests::Callback record(Outcome& o) {
  return [&o](const json* result, const Error* error) {
    o.called = true;
    ++o.calls;
    EXPECT_TRUE((result == nullptr) != (error == nullptr)) << "exactly one of result / error";
    if (result) o.result = *result;
    if (error) o.error = *error;
  };
}

class OutgoingRequestsTest : public ::testing::Test {
 protected:
  explicit OutgoingRequestsTest(size_t cap = 64)
      : requests_([this](const json& m) { sent_.push_back(m); }, cap) {}
  std::vector<json> sent_;
  OutgoingRequests requests_;
};

TEST_F(OutgoingRequestsTest, SendsWellFormedRequestsWithDistinctIds) {
  Outcome a, b;
  requests_.send("workspace/configuration", {{"items", json::array()}}, record(a));
  requests_.send("window/showMessageRequest", json::object(), record(b));
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_EQ(sent_[0]["jsonrpc"], "2.0");
  EXPECT_EQ(sent_[0]["method"], "workspace/configuration");
  EXPECT_EQ(sent_[0]["params"], (json{{"items", json::array()}}));
  ASSERT_TRUE(sent_[0]["id"].is_string());
  EXPECT_NE(sent_[0]["id"], sent_[1]["id"]);
  EXPECT_EQ(requests_.pending(), 2u);
  EXPECT_FALSE(a.called);
}

TEST_F(OutgoingRequestsTest, ResponsesAreRoutedById) {
  Outcome a, b;
  requests_.send("first", json::object(), record(a));
  requests_.send("second", json::object(), record(b));
  const json id_a = sent_[0]["id"], id_b = sent_[1]["id"];
  // Answer out of order.
  EXPECT_TRUE(
      requests_.handle_response({{"jsonrpc", "2.0"}, {"id", id_b}, {"result", {{"v", 2}}}}));
  EXPECT_FALSE(a.called);
  ASSERT_TRUE(b.result);
  EXPECT_EQ((*b.result)["v"], 2);
  EXPECT_TRUE(
      requests_.handle_response({{"jsonrpc", "2.0"}, {"id", id_a}, {"result", json::array({1})}}));
  ASSERT_TRUE(a.result);
  EXPECT_EQ(*a.result, json::array({1}));
  EXPECT_EQ(requests_.pending(), 0u);
  // A second response for the same id is not ours any more.
  EXPECT_FALSE(requests_.handle_response({{"jsonrpc", "2.0"}, {"id", id_a}, {"result", 1}}));
  EXPECT_EQ(a.calls, 1);
}

TEST_F(OutgoingRequestsTest, UnknownAndMalformedIdsAreNotOurs) {
  Outcome a;
  requests_.send("m", json::object(), record(a));
  EXPECT_FALSE(requests_.handle_response({{"id", "mk-999"}, {"result", 1}}));
  EXPECT_FALSE(requests_.handle_response({{"id", 1}, {"result", 1}}));  // numeric: never ours
  EXPECT_FALSE(requests_.handle_response({{"result", 1}}));
  EXPECT_FALSE(a.called);
  EXPECT_EQ(requests_.pending(), 1u);
}

TEST_F(OutgoingRequestsTest, MissingResultIsNull) {
  Outcome a;
  requests_.send("m", json::object(), record(a));
  EXPECT_TRUE(requests_.handle_response({{"jsonrpc", "2.0"}, {"id", sent_[0]["id"]}}));
  ASSERT_TRUE(a.result);
  EXPECT_TRUE(a.result->is_null());
}

TEST_F(OutgoingRequestsTest, ErrorResponsesReachTheCallback) {
  Outcome a, b;
  requests_.send("m", json::object(), record(a));
  requests_.send("m", json::object(), record(b));
  EXPECT_TRUE(
      requests_.handle_response({{"jsonrpc", "2.0"},
                                 {"id", sent_[0]["id"]},
                                 {"error", {{"code", -32601}, {"message", "unsupported"}}}}));
  ASSERT_TRUE(a.error);
  EXPECT_FALSE(a.result);
  EXPECT_EQ(a.error->code, -32601);
  EXPECT_EQ(a.error->message, "unsupported");
  // An error object without fields still fails the request.
  EXPECT_TRUE(requests_.handle_response({{"id", sent_[1]["id"]}, {"error", json::object()}}));
  ASSERT_TRUE(b.error);
  EXPECT_EQ(b.error->code, error_code::kInternalError);
  EXPECT_FALSE(b.error->message.empty());
}

TEST_F(OutgoingRequestsTest, ExpireFailsOverdueRequestsAndReturnsNextDeadline) {
  Outcome fast, slow;
  const auto before = Clock::now();
  requests_.send("fast/method", json::object(), record(fast), 10ms);
  requests_.send("slow/method", json::object(), record(slow), 1000ms);
  const auto after = Clock::now();

  // Nothing is due yet.
  auto next = requests_.expire(before);
  ASSERT_TRUE(next);
  EXPECT_GE(*next, before + 10ms);
  EXPECT_LE(*next, after + 10ms);
  EXPECT_FALSE(fast.called);

  next = requests_.expire(after + 100ms);
  ASSERT_TRUE(fast.error);
  EXPECT_EQ(fast.error->code, error_code::kRequestFailed);
  EXPECT_NE(fast.error->message.find("fast/method"), std::string::npos) << fast.error->message;
  EXPECT_FALSE(slow.called);
  ASSERT_TRUE(next);
  EXPECT_GE(*next, before + 1000ms);
  EXPECT_LE(*next, after + 1000ms);
  EXPECT_EQ(requests_.pending(), 1u);

  // A response for the expired request arrives late: ignored.
  EXPECT_FALSE(requests_.handle_response({{"id", sent_[0]["id"]}, {"result", 1}}));
  EXPECT_EQ(fast.calls, 1);

  next = requests_.expire(after + 2000ms);
  EXPECT_FALSE(next.has_value());
  EXPECT_TRUE(slow.error);
  EXPECT_EQ(requests_.pending(), 0u);
}

class CappedOutgoingRequestsTest : public OutgoingRequestsTest {
 protected:
  CappedOutgoingRequestsTest() : OutgoingRequestsTest(2) {}
};

TEST_F(CappedOutgoingRequestsTest, RequestsOverTheCapFailImmediately) {
  Outcome a, b, c;
  requests_.send("m", json::object(), record(a));
  requests_.send("m", json::object(), record(b));
  requests_.send("m", json::object(), record(c));
  EXPECT_EQ(sent_.size(), 2u);  // the third was never sent
  ASSERT_TRUE(c.error);
  EXPECT_EQ(c.error->code, error_code::kRequestFailed);
  EXPECT_FALSE(a.called);
  EXPECT_EQ(requests_.pending(), 2u);
  // Once one is answered there is room again.
  EXPECT_TRUE(requests_.handle_response({{"id", sent_[0]["id"]}, {"result", 1}}));
  Outcome d;
  requests_.send("m", json::object(), record(d));
  EXPECT_EQ(sent_.size(), 3u);
  EXPECT_FALSE(d.called);
  EXPECT_NE(sent_[2]["id"], sent_[1]["id"]);
}

TEST_F(OutgoingRequestsTest, FailAllFailsEveryPendingRequest) {
  Outcome a, b;
  requests_.send("m1", json::object(), record(a));
  requests_.send("m2", json::object(), record(b));
  requests_.fail_all("client went away");
  ASSERT_TRUE(a.error);
  ASSERT_TRUE(b.error);
  EXPECT_EQ(a.error->message, "client went away");
  EXPECT_EQ(b.error->code, error_code::kRequestFailed);
  EXPECT_EQ(requests_.pending(), 0u);
  EXPECT_FALSE(requests_.expire(Clock::now() + 1h).has_value());
  EXPECT_EQ(a.calls, 1);
}

TEST_F(OutgoingRequestsTest, CallbackMaySendAnotherRequest) {
  Outcome second;
  bool chained = false;
  requests_.send("first", json::object(), [&](const json*, const Error*) {
    chained = true;
    requests_.send("second", json::object(), record(second));
  });
  EXPECT_TRUE(requests_.handle_response({{"id", sent_[0]["id"]}, {"result", nullptr}}));
  EXPECT_TRUE(chained);
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_EQ(sent_[1]["method"], "second");
  EXPECT_EQ(requests_.pending(), 1u);
}

}  // namespace
}  // namespace mk::rpc
