// Dispatcher / Reply / ParamReader: every request answered exactly once, with the right error.
#include "lsp/protocol/dispatcher.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace mk::rpc {
namespace {

json request(json id, const std::string& method, json params = json::object()) {
  return make_request(id, method, std::move(params));
}

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() : dispatcher_([this](const json& m) { sent_.push_back(m); }) {}

  // The responses sent for `id`.
  std::vector<json> responses_for(const json& id) const {
    std::vector<json> out;
    for (const json& m : sent_) {
      if (m.contains("id") && m["id"] == id) out.push_back(m);
    }
    return out;
  }
  int error_code_of(const json& id) const {
    const auto r = responses_for(id);
    EXPECT_EQ(r.size(), 1u);
    if (r.empty() || !r[0].contains("error")) return 0;
    return r[0]["error"]["code"].get<int>();
  }

  std::vector<json> sent_;
  Dispatcher dispatcher_;
};

TEST_F(DispatcherTest, RequestGetsExactlyOneResponse) {
  dispatcher_.on_request("echo",
                         [](const ParamReader& p, Reply reply) { reply.result(p.value()); });
  dispatcher_.dispatch(request(1, "echo", {{"x", 5}}));
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0]["jsonrpc"], "2.0");
  EXPECT_EQ(sent_[0]["id"], 1);
  EXPECT_EQ(sent_[0]["result"], (json{{"x", 5}}));
  EXPECT_FALSE(sent_[0].contains("error"));
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
  // String ids come back unchanged, and missing params read as an empty object.
  dispatcher_.dispatch(json{{"jsonrpc", "2.0"}, {"id", "abc"}, {"method", "echo"}});
  ASSERT_EQ(responses_for("abc").size(), 1u);
  EXPECT_EQ(responses_for("abc")[0]["result"], json::object());
}

TEST_F(DispatcherTest, UnknownMethodIsMethodNotFound) {
  dispatcher_.dispatch(request(2, "no/such"));
  EXPECT_EQ(error_code_of(2), error_code::kMethodNotFound);
  EXPECT_EQ(error_code::kMethodNotFound, -32601);
  EXPECT_NE(sent_[0]["error"]["message"].get<std::string>().find("no/such"), std::string::npos);
  EXPECT_FALSE(dispatcher_.has_request_handler("no/such"));
}

TEST_F(DispatcherTest, ThrownRpcErrorBecomesTheResponse) {
  dispatcher_.on_request("bad", [](const ParamReader&, Reply) {
    throw RpcError(error_code::kInvalidParams, "no good");
  });
  dispatcher_.dispatch(request(3, "bad"));
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0]["error"]["code"], -32602);
  EXPECT_EQ(sent_[0]["error"]["message"], "no good");
}

TEST_F(DispatcherTest, OtherExceptionsAreInternalErrors) {
  dispatcher_.on_request(
      "boom", [](const ParamReader&, Reply) -> void { throw std::runtime_error("kaput"); });
  dispatcher_.dispatch(request(4, "boom"));
  EXPECT_EQ(error_code_of(4), error_code::kInternalError);
  EXPECT_NE(sent_[0]["error"]["message"].get<std::string>().find("kaput"), std::string::npos);
}

TEST_F(DispatcherTest, ExceptionAfterAnsweringSendsNothingMore) {
  dispatcher_.on_request("late", [](const ParamReader&, Reply reply) {
    reply.result(1);
    throw RpcError(error_code::kInvalidParams, "too late");
  });
  dispatcher_.dispatch(request(5, "late"));
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0]["result"], 1);
}

TEST_F(DispatcherTest, DroppedReplyAnswersInternalErrorOnce) {
  dispatcher_.on_request("drop", [](const ParamReader&, Reply) {});
  dispatcher_.dispatch(request(6, "drop"));
  EXPECT_EQ(error_code_of(6), error_code::kInternalError);
  EXPECT_EQ(error_code::kInternalError, -32603);
  EXPECT_EQ(sent_.size(), 1u);
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
}

TEST_F(DispatcherTest, DeferredReplyAnswersLaterAndTwiceSendsOnce) {
  std::optional<Reply> held;
  dispatcher_.on_request("later", [&](const ParamReader&, Reply reply) { held = reply; });
  dispatcher_.dispatch(request(7, "later"));
  EXPECT_TRUE(sent_.empty());  // the held copy keeps the request open
  EXPECT_EQ(dispatcher_.in_flight(), 1u);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->id(), 7);
  EXPECT_FALSE(held->answered());
  held->result("done");
  held->error(error_code::kInternalError, "again");
  held->result("and again");
  EXPECT_TRUE(held->answered());
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0]["result"], "done");
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
  held.reset();  // dropping an answered reply sends nothing
  EXPECT_EQ(sent_.size(), 1u);
}

TEST_F(DispatcherTest, CancelFlipsTheTokenOfAnInFlightRequest) {
  std::vector<Reply> held;
  dispatcher_.on_request("slow", [&](const ParamReader&, Reply reply) { held.push_back(reply); });
  dispatcher_.dispatch(request(8, "slow"));
  dispatcher_.dispatch(request("8", "slow"));  // a string id "8" is a different request
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(dispatcher_.in_flight(), 2u);
  EXPECT_FALSE(held[0].token().cancelled());
  EXPECT_TRUE(dispatcher_.cancel("8"));
  EXPECT_FALSE(held[0].token().cancelled());
  EXPECT_TRUE(held[1].token().cancelled());
  EXPECT_TRUE(dispatcher_.cancel(8));
  EXPECT_TRUE(held[0].token().cancelled());
  EXPECT_TRUE(sent_.empty());  // cancelling only flags; the handler still answers
  held[1].error(error_code::kRequestCancelled, "cancelled");
  EXPECT_EQ(error_code_of("8"), error_code::kRequestCancelled);
  held[0].result(nullptr);
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
}

TEST_F(DispatcherTest, CancelBeforeDispatchAnswersRequestCancelled) {
  bool ran = false;
  dispatcher_.on_request("work", [&](const ParamReader&, Reply reply) {
    ran = true;
    reply.result(nullptr);
  });
  EXPECT_FALSE(dispatcher_.cancel(9));  // not in flight yet
  dispatcher_.dispatch(request(9, "work"));
  EXPECT_FALSE(ran);
  EXPECT_EQ(error_code_of(9), error_code::kRequestCancelled);
  EXPECT_EQ(error_code::kRequestCancelled, -32800);
  // The early cancellation is used up: another request runs normally.
  dispatcher_.dispatch(request(10, "work"));
  EXPECT_TRUE(ran);
  EXPECT_TRUE(responses_for(10).at(0).contains("result"));
}

TEST_F(DispatcherTest, RequestGateRefusesBeforeTheHandler) {
  bool initialized = false;
  int runs = 0;
  dispatcher_.set_request_gate([&](const std::string& method) -> std::optional<Error> {
    if (!initialized && method != "initialize")
      return Error{error_code::kServerNotInitialized, "not initialized"};
    return std::nullopt;
  });
  dispatcher_.on_request("initialize", [&](const ParamReader&, Reply reply) {
    initialized = true;
    reply.result(json::object());
  });
  dispatcher_.on_request("hover", [&](const ParamReader&, Reply reply) {
    ++runs;
    reply.result(nullptr);
  });
  dispatcher_.dispatch(request(1, "hover"));
  EXPECT_EQ(error_code_of(1), -32002);
  EXPECT_EQ(runs, 0);
  dispatcher_.dispatch(request(2, "initialize"));
  dispatcher_.dispatch(request(3, "hover"));
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(responses_for(3).at(0).contains("result"));
  EXPECT_EQ(dispatcher_.in_flight(), 0u);
}

TEST_F(DispatcherTest, NotificationsGetNoResponse) {
  int calls = 0;
  dispatcher_.on_notification(
      "didOpen", [&](const ParamReader& p) { calls += static_cast<int>(p.integer("n")); });
  dispatcher_.on_notification(
      "throws", [](const ParamReader&) { throw RpcError(error_code::kInvalidParams, "x"); });
  dispatcher_.dispatch(make_notification("didOpen", {{"n", 2}}));
  dispatcher_.dispatch(make_notification("throws", json::object()));
  dispatcher_.dispatch(make_notification("$/unknown", json::object()));
  EXPECT_EQ(calls, 2);
  dispatcher_.set_notification_gate([](const std::string& m) { return m != "didOpen"; });
  dispatcher_.dispatch(make_notification("didOpen", {{"n", 2}}));
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(sent_.empty());
}

TEST_F(DispatcherTest, RejectInvalidKeepsUsableIds) {
  dispatcher_.reject_invalid(json{{"id", 5}}, "bad message");
  dispatcher_.reject_invalid(json{{"id", json::array()}}, "bad id");
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_EQ(sent_[0]["id"], 5);
  EXPECT_EQ(sent_[0]["error"]["code"], error_code::kInvalidRequest);
  EXPECT_TRUE(sent_[1]["id"].is_null());
}

TEST_F(DispatcherTest, ParamReaderErrorsNameTheJsonPath) {
  dispatcher_.on_request("pos", [](const ParamReader& p, Reply reply) {
    const ParamReader position = p.object("position");
    reply.result(position.unsigned_integer("line"));
  });
  auto message_for = [&](json id, json params) {
    dispatcher_.dispatch(request(id, "pos", std::move(params)));
    const auto r = responses_for(id);
    EXPECT_EQ(r.size(), 1u);
    EXPECT_EQ(r.at(0)["error"]["code"], error_code::kInvalidParams);
    return r.at(0)["error"]["message"].get<std::string>();
  };
  EXPECT_EQ(message_for(1, {{"position", {{"line", "3"}}}}),
            "params.position.line: expected an unsigned integer, got string");
  EXPECT_EQ(message_for(2, json::object()), "params.position: missing");
  // Numbers parsed from text are unsigned when non-negative.
  EXPECT_EQ(message_for(3, json::parse(R"({"position": 7})")),
            "params.position: expected an object, got unsigned integer");
  EXPECT_EQ(message_for(4, {{"position", {{"line", -1}}}}),
            "params.position.line: value -1 is out of range for an unsigned 32-bit integer");
  EXPECT_EQ(message_for(5, {{"position", {{"line", 1.5}}}}),
            "params.position.line: expected an unsigned integer, got number");
  dispatcher_.dispatch(request(6, "pos", {{"position", {{"line", 42}}}}));
  EXPECT_EQ(responses_for(6).at(0)["result"], 42);
}

TEST(ParamReader, TypedAndOptionalFields) {
  const json v = {{"s", "x"}, {"i", -4}, {"n", nullptr}, {"o", {{"k", 1}}}, {"big", 4294967295LL}};
  const ParamReader p(v);
  EXPECT_EQ(p.string("s"), "x");
  EXPECT_EQ(p.integer("i"), -4);
  EXPECT_EQ(p.unsigned_integer("big"), 4294967295u);
  EXPECT_EQ(p.optional_string("missing"), std::nullopt);
  EXPECT_EQ(p.optional_string("n"), std::nullopt);  // null reads as absent
  EXPECT_EQ(p.optional_integer("i"), -4);
  ASSERT_TRUE(p.optional_object("o"));
  EXPECT_EQ(p.optional_object("o")->path(), "params.o");
  EXPECT_EQ(p.optional_object("o")->integer("k"), 1);
  EXPECT_EQ(p.optional_raw("n"), nullptr);
  try {
    (void)p.optional_string("i");
    FAIL() << "expected RpcError";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), error_code::kInvalidParams);
    EXPECT_STREQ(e.what(), "params.i: expected a string, got integer");
  }
  const json array = json::array();
  EXPECT_THROW(ParamReader(array).string("x"), RpcError);
}

TEST(ParamReader, OutOfRangeUnsignedSaysSo) {
  const json v = json::parse(R"({"line": 4294967296})");  // as read from a client
  try {
    (void)ParamReader(v).unsigned_integer("line");
    FAIL() << "expected RpcError";
  } catch (const RpcError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find("got unsigned integer"), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind("params.line: ", 0), 0u) << msg;
  }
}

TEST(ParamReader, TakeStringMovesOutOfAnOwnedMessageOnlyAndChecksTheTypeLikeString) {
  const std::string text(100000, 'x');  // a document: moved, not copied
  json owned = {{"textDocument", {{"text", text}, {"version", 3}}}};
  const ParamReader reader(owned);
  EXPECT_EQ(reader.object("textDocument").take_string("text"), text);
  EXPECT_EQ(owned["textDocument"]["text"], "");  // moved out, through the nested reader
  EXPECT_THROW((void)reader.object("textDocument").take_string("version"), RpcError);

  const json shared = {{"text", text}};  // someone else's: copied
  EXPECT_EQ(ParamReader(shared).take_string("text"), text);
  EXPECT_EQ(shared["text"], text);
}

TEST_F(DispatcherTest, HandlersGetTheMessageTheyMayMoveStringsOutOf) {
  std::string seen;
  dispatcher_.on_notification("textDocument/didOpen", [&](const ParamReader& p) {
    seen = p.object("textDocument").take_string("text");
  });
  json message = make_notification(
      "textDocument/didOpen", {{"textDocument", {{"uri", "file:///a.py"}, {"text", "x = 1\n"}}}});
  dispatcher_.dispatch(message);
  EXPECT_EQ(seen, "x = 1\n");
  EXPECT_EQ(message["params"]["textDocument"]["text"], "");
}

}  // namespace
}  // namespace mk::rpc
