// Fuzzes the server side of the worker protocol: the input is what a worker might write on
// stdout (lines of JSON, half JSON, binary garbage). Each line is classified like the reader
// thread does, and every response object is turned into a reply like WorkerProcess::call does.
// Neither may throw or crash, and a reply is Ok only for "ok": true.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tpu/host/worker_process.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "worker protocol property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    using Kind = mk::tpu::WorkerLine::Kind;
    mk::tpu::WorkerLine parsed = mk::tpu::parse_worker_line(line);
    if (parsed.kind == Kind::Blank || parsed.kind == Kind::Garbage) continue;
    check(parsed.message.is_object() && !parsed.key.empty(), "a message without an id");
    if (parsed.kind == Kind::Event) continue;
    const auto ok_field = parsed.message.find("ok");
    const bool says_ok = ok_field != parsed.message.end() && *ok_field == true;
    for (bool cancelling : {false, true}) {
      const mk::tpu::WorkerReply reply = mk::tpu::reply_from_response(parsed.message, cancelling);
      if (cancelling) {
        check(reply.status == mk::tpu::WorkerReply::Status::Cancelled, "cancelled status");
      } else {
        check(reply.ok() == says_ok, "Ok exactly when \"ok\" is true");
        check(reply.ok() || !reply.message.empty(), "a failure without a message");
      }
    }
  }
  return 0;
}
