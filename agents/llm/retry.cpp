#include "agents/llm/retry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>
#include <thread>

namespace mk::llm {

using std::chrono::milliseconds;

namespace {

constexpr milliseconds kWaitStep{20};

std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// IMF-fixdate, the form RFC 9110 requires senders to use: "Sun, 06 Nov 1994 08:49:37 GMT".
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text) {
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::string copy(text);
  char weekday[4] = {}, month[4] = {}, zone[4] = {};
  int day = 0, year = 0, hour = 0, minute = 0, second = 0;
  if (std::sscanf(copy.c_str(), "%3s, %d %3s %d %d:%d:%d %3s", weekday, &day, month, &year, &hour,
                  &minute, &second, zone) != 8)
    return std::nullopt;
  if (std::string_view(zone) != "GMT") return std::nullopt;
  int month_index = -1;
  for (int i = 0; i < 12; ++i)
    if (std::string_view(month) == kMonths[i]) month_index = i;
  if (month_index < 0 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month_index;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  std::time_t seconds = timegm(&tm);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(seconds);
}

}  // namespace

std::optional<milliseconds> parse_retry_after(std::string_view value,
                                              std::chrono::system_clock::time_point now) {
  value = trim_blanks(value);
  if (value.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(value.front()))) {
    double seconds = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(seconds))
      return std::nullopt;
    return milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
  }
  auto when = parse_http_date(value);
  if (!when) return std::nullopt;
  auto delta = std::chrono::ceil<milliseconds>(*when - now);
  return std::max(delta, milliseconds(0));
}

milliseconds backoff_delay(const RetryPolicy& policy, int attempt, std::mt19937_64& rng) {
  double cap =
      static_cast<double>(policy.base_delay.count()) * std::pow(2.0, std::max(attempt - 1, 0));
  cap = std::min(cap, static_cast<double>(policy.max_delay.count()));
  std::uniform_real_distribution<double> jitter(0.0, std::max(cap, 0.0));
  return milliseconds(static_cast<int64_t>(jitter(rng)));
}

bool wait_unless_cancelled(milliseconds delay, const CancelFlag& cancelled) {
  auto deadline = std::chrono::steady_clock::now() + delay;
  while (true) {
    if (cancelled && cancelled()) return false;
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, kWaitStep));
  }
}

}  // namespace mk::llm
