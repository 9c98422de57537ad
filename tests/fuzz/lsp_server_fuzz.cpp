// Fuzzes the whole language server over a byte buffer: Content-Length framing, JSON parsing, the
// reader thread's shape checks, JSON-RPC dispatch and every handler (documents, edits, hover,
// lenses, symbols, configuration, commands). Nothing may crash, and every request (a message with
// a string or integer id and a string method, before the first `exit`) is answered exactly once.
//
// No process is ever started: settings can name arbitrary host commands, so this binary makes
// fork/vfork fail and points the worker bundle and the evaluation cache at nothing.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "lsp/protocol/framing.h"
#include "lsp/server/language_server.h"

extern "C" pid_t fork() noexcept {
  errno = EAGAIN;
  return -1;
}
extern "C" pid_t vfork() noexcept {
  errno = EAGAIN;
  return -1;
}

namespace {

using nlohmann::json;
constexpr size_t kMaxMessage = 1 << 20;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "server property violated: %s\n", what.c_str());
    std::abort();
  }
}

// Hands out one byte per read, so the reader never holds bytes past the frame it returned and
// `delivered()` is exactly where the next frame starts.
class ByteByByteSource : public mk::rpc::ByteSource {
 public:
  explicit ByteByByteSource(std::string_view data) : data_(data) {}
  size_t read(char* buffer, size_t n) override {
    if (pos_ == data_.size() || n == 0) return 0;
    buffer[0] = data_[pos_++];
    return 1;
  }
  size_t delivered() const { return pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

bool params_acceptable(const json& m) {
  if (!m.contains("params")) return true;
  const json& p = m["params"];
  return p.is_null() || p.is_object() || p.is_array();
}

// Calls f(message, start offset) for each frame whose body is JSON (null when it is not).
template <typename F>
void for_each_message(std::string_view stream, F&& f) {
  ByteByByteSource source(stream);
  mk::rpc::FrameReader reader(source, kMaxMessage);
  for (;;) {
    const size_t start = source.delivered();
    auto r = reader.next();
    if (r.status == mk::rpc::FrameReader::Status::Eof) return;
    if (r.status != mk::rpc::FrameReader::Status::Message) continue;
    if (!f(json::parse(r.body, nullptr, /*allow_exceptions=*/false), start)) return;
  }
}

// The input up to its first `exit` notification. `exit` ends the main loop while the reader
// thread may still be reading, which only a process exit cleans up (main.cpp _Exits).
std::string_view before_exit(std::string_view input) {
  std::string_view kept = input;
  for_each_message(input, [&](const json& m, size_t start) {
    if (m.is_object() && !m.contains("id") && m.value("method", json()) == "exit" &&
        params_acceptable(m)) {
      kept = input.substr(0, start);
      return false;
    }
    return true;
  });
  return kept;
}

// How many answers each request id (as JSON text) must get, following the reader thread's rules.
std::map<std::string, int> expected_answers(std::string_view input) {
  std::map<std::string, int> expected;
  for_each_message(input, [&](const json& m, size_t) {
    if (!m.is_object() || !m.contains("id")) return true;
    const json& id = m["id"];
    if (!id.is_string() && !id.is_number_integer()) return true;  // answered with id null
    const std::string key = id.dump();
    if (m.contains("method")) {
      // Every request, $/cancelRequest sent as one included (answered MethodNotFound by the
      // reader thread, LSP 3.17's rule for `$/` requests).
      expected[key]++;
    } else if (!m.contains("result") && !m.contains("error")) {
      expected[key]++;  // neither request nor response: rejected, with its id
    }
    return true;
  });
  return expected;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("MAXKERNEL_WORKER_DIR", "/nonexistent/maxkernel-fuzz", 1);
  ::setenv("MAXKERNEL_PYTHON", "/nonexistent/maxkernel-fuzz/python", 1);
  const std::string store = "/tmp/maxkernel-fuzz-store-" + std::to_string(::getpid()) + ".sqlite";
  ::setenv("MAXKERNEL_STORE", store.c_str(), 1);
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input =
      before_exit(std::string_view(reinterpret_cast<const char*>(data), size));
  std::string output;
  std::mutex output_mutex;
  {
    mk::server::ServerOptions options;
    options.max_message_bytes = kMaxMessage;
    options.client_request_timeout = std::chrono::milliseconds(200);
    mk::server::LanguageServer server(options, [&](std::string_view frame) {
      std::lock_guard<std::mutex> lock(output_mutex);
      output.append(frame);
    });
    mk::rpc::StringSource source{std::string(input)};
    server.run(source);
  }

  std::map<std::string, int> answered;
  for_each_message(output, [&](const json& m, size_t) {
    check(m.is_object() && m.value("jsonrpc", "") == "2.0", "output is not JSON-RPC: " + m.dump());
    if (!m.contains("method")) {
      check(m.contains("id") && (m.contains("result") != m.contains("error")),
            "malformed response: " + m.dump());
      if (!m["id"].is_null()) answered[m["id"].dump()]++;
    }
    return true;
  });
  const std::map<std::string, int> expected = expected_answers(input);
  for (const auto& [id, count] : expected) {
    const auto it = answered.find(id);
    const int got = it == answered.end() ? 0 : it->second;
    check(got == count, "request " + id + " sent " + std::to_string(count) + " times, answered " +
                            std::to_string(got) + " times");
  }
  for (const auto& [id, count] : answered)
    check(expected.count(id) > 0, "an answer to " + id + ", which was never asked");
  return 0;
}
