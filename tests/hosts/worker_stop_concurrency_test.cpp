// Many workers stopped from several threads at once, round after round. Guards the fix for
// boostorg/process#347 (docs/reliability.md): Boost.Process 1.74's child::wait_for swaps the
// process-wide SIGCHLD handler and is not thread-safe, so two threads stopping workers at once
// could leave a handler that calls itself and a wait that spins forever. WorkerProcess polls
// child::running instead; this test fails (or its watchdog ends it) if a wait like that returns.
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tpu/host/worker_process.h"

namespace mk::tpu {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kThreads = 8;
constexpr int kWorkersPerThread = 3;
constexpr int kRounds = 5;
constexpr milliseconds kGrace{200};
// stop() may wait the grace, then kill()'s SIGTERM wait (1 s), then SIGKILL and reap.
constexpr milliseconds kStopBound = kGrace + milliseconds(1000) + milliseconds(3000);
constexpr milliseconds kSetupLimit{30000};
constexpr milliseconds kStopPhaseLimit = kWorkersPerThread * kStopBound + milliseconds(2000);

enum class Kind { ExitsWhenAsked, ExitsOnSigterm, IgnoresSigterm, AlreadyCrashed };
constexpr int kKinds = 4;

const char* name_of(Kind kind) {
  switch (kind) {
    case Kind::ExitsWhenAsked:
      return "exits when asked";
    case Kind::ExitsOnSigterm:
      return "exits on SIGTERM";
    case Kind::IgnoresSigterm:
      return "ignores SIGTERM";
    case Kind::AlreadyCrashed:
      return "already crashed";
  }
  return "?";
}

std::vector<std::string> command_for(Kind kind) {
  switch (kind) {
    case Kind::ExitsWhenAsked:
      return {"cat"};  // ends at end of input, which stop() gives it
    case Kind::ExitsOnSigterm:
      return {"sh", "-c", "exec sleep 60"};
    case Kind::IgnoresSigterm:  // SIG_IGN survives exec: only SIGKILL ends it
      return {"sh", "-c", "trap '' TERM; echo ready >&2; exec sleep 60"};
    case Kind::AlreadyCrashed:
      return {"sh", "-c", "ulimit -c 0; kill -SEGV $$"};
  }
  return {};
}

// Ends the test process with a message when a phase outlives its limit: a stop() that spins
// (#347) would otherwise hold ctest until its own timeout without saying what hung.
class Watchdog {
 public:
  Watchdog() : thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  void arm(std::string what, milliseconds limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = std::move(what);
    limit_ = limit;
    deadline_ = Clock::now() + limit;
    changed_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    deadline_.reset();
  }
  // A worker's life as the watchdog sees it: started, then inside stop(), then stopped.
  void started(int pid, std::string description) {
    std::lock_guard<std::mutex> lock(mutex_);
    alive_[pid] = std::move(description);
  }
  void stopping(int pid) {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.insert(pid);
  }
  void stopped(int pid) {
    std::lock_guard<std::mutex> lock(mutex_);
    alive_.erase(pid);
    stopping_.erase(pid);
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!finished_) {
      if (deadline_ && Clock::now() >= *deadline_) fire();
      if (deadline_)
        changed_.wait_until(lock, *deadline_);
      else
        changed_.wait(lock);
    }
  }
  [[noreturn]] void fire() {
    std::fprintf(stderr,
                 "WATCHDOG: %s did not finish within %.1f s; %zu stop() call(s) never returned "
                 "(a SIGCHLD handler that calls itself spins like this: boostorg/process#347)\n",
                 what_.c_str(), static_cast<double>(limit_.count()) / 1000.0, stopping_.size());
    for (const auto& [pid, description] : alive_) {
      if (stopping_.count(pid) != 0)
        std::fprintf(stderr, "  still stopping: %s (pid %d)\n", description.c_str(), pid);
      // Only a child we have not reaped: its pid cannot belong to anyone else yet.
      if (::waitpid(pid, nullptr, WNOHANG) == 0) ::kill(pid, SIGKILL);
    }
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool finished_ = false;
  std::optional<Clock::time_point> deadline_;
  milliseconds limit_{0};
  std::string what_;
  std::map<int, std::string> alive_;  // started, stop() not yet returned: killed on firing
  std::set<int> stopping_;
  std::thread thread_;  // last: starts once the members it reads exist
};

// Brings a worker to the state its kind promises before the threads are released.
std::string prepare(WorkerProcess& worker, Kind kind) {
  if (kind == Kind::AlreadyCrashed) {
    // Waits for the death without reaping it: stop() must reap the zombie itself.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(worker.pid()), &info, WEXITED | WNOWAIT) != 0)
      return std::string("waitid: ") + std::strerror(errno);
    if (info.si_code != CLD_KILLED && info.si_code != CLD_DUMPED)
      return "did not die of a signal (si_code " + std::to_string(info.si_code) + ")";
  } else if (kind == Kind::IgnoresSigterm) {
    // SIGTERM before the trap is set would end it early and skip the SIGKILL path.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (worker.stderr_tail().find("ready") == std::string::npos) {
      if (Clock::now() >= deadline) return "never said it was ready";
      std::this_thread::sleep_for(milliseconds(2));
    }
  }
  return "";
}

struct Stopped {
  Kind kind;
  std::string description;
  int pid;
  Clock::duration took;
  pid_t reaped;    // waitpid(pid, WNOHANG) right after stop(): -1 (ECHILD) once it was reaped
  int wait_error;  // its errno
};

// One thread's share of a round: start its workers, wait for the others, stop them all.
void stop_together(int thread_index, std::latch& go, Watchdog& watchdog,
                   std::vector<Stopped>& out) {
  std::vector<std::pair<Kind, std::unique_ptr<WorkerProcess>>> workers;
  for (int slot = 0; slot < kWorkersPerThread; ++slot) {
    const auto kind = static_cast<Kind>((thread_index + slot) % kKinds);
    const std::string description =
        std::string(name_of(kind)) + " #" + std::to_string(thread_index * kWorkersPerThread + slot);
    auto worker = std::make_unique<WorkerProcess>(command_for(kind), description);
    std::string error;
    if (!worker->start(error)) {
      ADD_FAILURE() << error;
      continue;
    }
    watchdog.started(worker->pid(), description);
    if (error = prepare(*worker, kind); !error.empty())
      ADD_FAILURE() << description << ": " << error;
    workers.emplace_back(kind, std::move(worker));
  }
  go.arrive_and_wait();  // every thread arrives, even one whose workers failed to start
  for (auto& [kind, worker] : workers) {
    const int pid = worker->pid();
    watchdog.stopping(pid);
    const auto start = Clock::now();
    worker->stop(kGrace);
    const auto took = Clock::now() - start;
    // Asked now, not after the destructor, whose own kill() would reap what stop() left.
    errno = 0;
    const pid_t reaped = ::waitpid(pid, nullptr, WNOHANG);
    out.push_back({kind, worker->description(), pid, took, reaped, errno});
    watchdog.stopped(pid);
  }
  workers.clear();  // the destructors, too, run while other threads are still stopping
}

// stop() writes the shutdown request into a pipe whose reader may be dead (the crashed kind).
// With SIGPIPE at its default that write would end the test process, unless WorkerProcess keeps
// the signal to itself, as it must: a library cannot count on its program ignoring SIGPIPE.
class DefaultSigpipe {
 public:
  DefaultSigpipe() {
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &fallback, &saved_);
  }
  ~DefaultSigpipe() { ::sigaction(SIGPIPE, &saved_, nullptr); }
  DefaultSigpipe(const DefaultSigpipe&) = delete;
  DefaultSigpipe& operator=(const DefaultSigpipe&) = delete;

 private:
  struct sigaction saved_ {};
};

std::uintptr_t handler_of(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) != 0 ? reinterpret_cast<std::uintptr_t>(action.sa_sigaction)
                                             : reinterpret_cast<std::uintptr_t>(action.sa_handler);
}

std::string describe(const struct sigaction& action) {
  if ((action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == SIG_DFL) return "SIG_DFL";
  if ((action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == SIG_IGN) return "SIG_IGN";
  char text[32];
  std::snprintf(text, sizeof text, "handler at %#jx", static_cast<uintmax_t>(handler_of(action)));
  return text;
}

TEST(WorkerStopConcurrencyTest, ThreadsStoppingMixedWorkersAtOnceReapAllAndKeepSigchld) {
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGCHLD, nullptr, &before), 0);
  const DefaultSigpipe default_sigpipe;
  spdlog::default_logger();  // the registry exists before worker threads log (TSan)
  Watchdog watchdog;
  for (int round = 1; round <= kRounds; ++round) {
    const std::string label = "round " + std::to_string(round);
    std::latch go(kThreads + 1);
    std::vector<std::vector<Stopped>> results(kThreads);
    std::vector<std::thread> threads;
    watchdog.arm(label + " (starting workers)", kSetupLimit);
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back(stop_together, t, std::ref(go), std::ref(watchdog),
                           std::ref(results[t]));
    go.arrive_and_wait();
    watchdog.arm(label + " (stopping workers)", kStopPhaseLimit);
    for (std::thread& thread : threads) thread.join();
    watchdog.disarm();

    size_t stopped = 0;
    for (const auto& per_thread : results) {
      for (const Stopped& s : per_thread) {
        ++stopped;
        const auto took_ms = std::chrono::duration_cast<milliseconds>(s.took).count();
        EXPECT_LE(s.took, kStopBound)
            << label << ": stopping " << s.description << " took " << took_ms << " ms";
        // It ignored the request and SIGTERM: only the kill after the grace ended it.
        if (s.kind == Kind::IgnoresSigterm) {
          EXPECT_GE(s.took, kGrace) << label << ": " << s.description << " ended early";
        }
        EXPECT_TRUE(s.reaped == -1 && s.wait_error == ECHILD)
            << label << ": " << s.description << " (pid " << s.pid << ") "
            << (s.reaped == 0       ? "was still running when stop() returned"
                : s.reaped == s.pid ? "was left a zombie by stop()"
                                    : std::string("waitpid: ") + std::strerror(s.wait_error));
        if (::waitpid(s.pid, nullptr, WNOHANG) == 0) {  // leave no survivor behind a failure
          ::kill(s.pid, SIGKILL);
          ::waitpid(s.pid, nullptr, 0);
        }
      }
    }
    EXPECT_EQ(stopped, static_cast<size_t>(kThreads * kWorkersPerThread)) << label;

    struct sigaction after {};
    ASSERT_EQ(::sigaction(SIGCHLD, nullptr, &after), 0);
    EXPECT_EQ(handler_of(after), handler_of(before))
        << label << ": SIGCHLD's disposition changed from " << describe(before) << " to "
        << describe(after) << " (a library swapped the process-wide handler)";
    if (HasFailure()) break;  // later rounds would repeat the same messages
  }
}

}  // namespace
}  // namespace mk::tpu
