#include "agents/llm/http_transport.h"
#include "agents/llm/ca_bundle.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace mk::llm {

namespace {

constexpr int kPollMs = 20;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  const ChunkHandler* on_chunk = nullptr;
  const CancelFlag* cancelled = nullptr;
  CURL* easy = nullptr;
  HttpResult* result = nullptr;
  bool cancel_seen = false;
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim_space(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    transfer->result->headers.clear();  // a new response (after 100-continue or a redirect)
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    transfer->result->headers[lower(trim_space(line.substr(0, colon)))] =
        std::string(trim_space(line.substr(colon + 1)));
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t bytes = size * count;
  long status = 0;
  curl_easy_getinfo(transfer->easy, CURLINFO_RESPONSE_CODE, &status);
  bool streamed = transfer->on_chunk && *transfer->on_chunk && status >= 200 && status < 300;
  if (!streamed) {
    transfer->result->body.append(data, bytes);
    return bytes;
  }
  try {
    (*transfer->on_chunk)(std::string_view(data, bytes));
  } catch (...) {
    transfer->result->handler_error = std::current_exception();
    return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
  }
  return bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  if (transfer->cancelled && *transfer->cancelled && (*transfer->cancelled)()) {
    transfer->cancel_seen = true;
    return 1;  // CURLE_ABORTED_BY_CALLBACK
  }
  return 0;
}

struct EasyDeleter {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

TransportStatus classify(CURLcode code, CURL* easy, const Transfer& transfer) {
  switch (code) {
    case CURLE_OK:
      return TransportStatus::Ok;
    case CURLE_ABORTED_BY_CALLBACK:
      return TransportStatus::Cancelled;
    case CURLE_WRITE_ERROR:
      return transfer.result->handler_error ? TransportStatus::Aborted
                                            : TransportStatus::Interrupted;
    case CURLE_OPERATION_TIMEDOUT: {
      curl_off_t connected = 0;
      curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connected);
      return connected == 0 ? TransportStatus::ConnectTimeout : TransportStatus::Timeout;
    }
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR:
      return TransportStatus::ConnectFailed;
    default:
      return TransportStatus::Interrupted;
  }
}

}  // namespace

const char* to_string(TransportStatus status) {
  switch (status) {
    case TransportStatus::Ok:
      return "ok";
    case TransportStatus::Cancelled:
      return "cancelled";
    case TransportStatus::ConnectTimeout:
      return "connect timeout";
    case TransportStatus::Timeout:
      return "timeout";
    case TransportStatus::ConnectFailed:
      return "connection failed";
    case TransportStatus::Interrupted:
      return "connection interrupted";
    case TransportStatus::Aborted:
      return "aborted";
  }
  return "?";
}

HttpResult http_post(const HttpRequest& request, const ChunkHandler& on_chunk,
                     const CancelFlag& cancelled) {
  global_init();
  HttpResult result;
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
  if (!easy || !multi) {
    result.transport = TransportStatus::ConnectFailed;
    result.transport_error = "cannot initialise libcurl";
    return result;
  }
  Transfer transfer{&on_chunk, &cancelled, easy.get(), &result, false};
  curl_slist* raw_headers = nullptr;
  for (const auto& [name, value] : request.headers)
    raw_headers = curl_slist_append(raw_headers, (name + ": " + value).c_str());
  // libcurl would otherwise send "Expect: 100-continue" for large bodies and wait for it.
  raw_headers = curl_slist_append(raw_headers, "Expect:");
  std::unique_ptr<curl_slist, SlistDeleter> headers(raw_headers);

  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(request.total_timeout.count()));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // whatever this libcurl can decode
  curl_easy_setopt(e, CURLOPT_USERAGENT, "maxkernel/0.1");
  if (const auto ca = ca_bundle_override()) curl_easy_setopt(e, CURLOPT_CAINFO, ca->c_str());

  curl_multi_add_handle(multi.get(), e);
  CURLcode code = CURLE_OK;
  bool finished = false;
  // The multi loop, not a blocking curl_easy_perform, so the CancelFlag is checked every few ms
  // even while connecting or waiting for a silent server (the xferinfo callback covers the rest).
  while (!finished) {
    int running = 0;
    CURLMcode mcode = curl_multi_perform(multi.get(), &running);
    if (mcode != CURLM_OK) {
      code = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi.get(), &queued)) {
      if (message->msg == CURLMSG_DONE) {
        code = message->data.result;
        finished = true;
      }
    }
    if (finished) break;
    if (cancelled && cancelled()) {
      transfer.cancel_seen = true;
      code = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_multi_poll(multi.get(), nullptr, 0, kPollMs, nullptr);
  }
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  result.status = static_cast<int>(status);
  result.transport =
      transfer.cancel_seen ? TransportStatus::Cancelled : classify(code, e, transfer);
  if (result.transport != TransportStatus::Ok) result.transport_error = curl_easy_strerror(code);
  curl_multi_remove_handle(multi.get(), e);
  return result;
}

}  // namespace mk::llm
