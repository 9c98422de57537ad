// The C++ host pool against real worker processes (python with JAX, CPU): crashes, hangs,
// garbage output, cancellation and parallel compile slots. A failed job must not affect the next.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <cerrno>
#include <thread>

#include "tpu/host/host_pool.h"
#include "tpu/host/kernel_host.h"
#include "worker_host_fixture.h"

namespace mk::tpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

class KernelHostTest : public WorkerHostTest {
 protected:
  // scale_add.py with its candidate's body replaced by `body` (indented code run when traced).
  json lower_request(const std::string& prelude) {
    return {{"op", "lower"},
            {"source", scale_add_with(prelude)},
            {"filename", (scratch_ / "k.py").string()},
            {"task", {{"form", "infile"}}},
            {"target", "tpu"}};
  }

  // A request whose work ends the worker's own process with exit code 7: the `reference` op runs
  // the task's reference in the worker (a candidate never runs there: its code runs in a child,
  // and a candidate that exits ends only that child).
  json crashing_request() {
    std::string src = scale_add_with("");
    const std::string anchor = "def reference(x, y):\n";
    src.replace(src.find(anchor), anchor.size(), anchor + "    import os; os._exit(7)\n");
    return {{"op", "reference"},
            {"source", src},
            {"filename", (scratch_ / "k.py").string()},
            {"task", {{"form", "infile"}}}};
  }
};

TEST_F(KernelHostTest, CrashedWorkerIsReportedAndReplaced) {
  KernelHost host(config_, bundle_);
  WorkerReply crashed = host.run(Lane::Compile, crashing_request());
  EXPECT_EQ(crashed.status, WorkerReply::Status::Crashed) << crashed.message;
  EXPECT_NE(crashed.message.find("exited with code 7"), std::string::npos) << crashed.message;
  EXPECT_NE(crashed.stderr_tail.find("maxkernel-worker"), std::string::npos);
  WorkerReply next = host.run(Lane::Compile, lower_request(""));
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_TRUE(next.body.value("lowered", false));
}

TEST_F(KernelHostTest, ACandidateThatExitsEndsItsOwnProcessNotTheWorker) {
  KernelHost host(config_, bundle_);
  WorkerReply failed = host.run(Lane::Compile, lower_request("    import os; os._exit(7)\n"));
  EXPECT_EQ(failed.status, WorkerReply::Status::Failed) << failed.message;
  EXPECT_NE(failed.message.find("the candidate's process ended without an answer: it exited with "
                                "code 7"),
            std::string::npos)
      << failed.message;
  EXPECT_EQ(host.live_workers(), 1u);  // the worker lives on and answers the next request
  WorkerReply next = host.run(Lane::Compile, lower_request(""));
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_EQ(host.live_workers(), 1u);
}

TEST_F(KernelHostTest, HungWorkerIsKilledAtTheTimeout) {
  KernelHost host(config_, bundle_);
  const auto start = std::chrono::steady_clock::now();
  WorkerReply hung = host.run(Lane::Compile, lower_request("    import time; time.sleep(600)\n"),
                              {}, milliseconds(2500));
  EXPECT_EQ(hung.status, WorkerReply::Status::TimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  WorkerReply next = host.run(Lane::Compile, lower_request(""));
  EXPECT_TRUE(next.ok()) << next.message;
}

TEST_F(KernelHostTest, CancellationReachesTheRunningJob) {
  KernelHost host(config_, bundle_);
  ASSERT_TRUE(host.run(Lane::Compile, lower_request("")).ok());  // a warm compile worker
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(500));  // let the request reach the worker first
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  WorkerReply r = host.run(Lane::Compile, lower_request("    import time; time.sleep(600)\n"),
                           [&] { return cancel.load(); });
  canceller.join();
  EXPECT_EQ(r.status, WorkerReply::Status::Cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_TRUE(host.run(Lane::Compile, lower_request("")).ok());
}

TEST_F(KernelHostTest, GarbageOnTheProtocolStreamIsMalformedNotAHang) {
  HostConfig c = config_;
  c.kind = find_host_kind("command");
  c.command_template = {"sh", "-c", "echo this-is-not-json; exec {command}"};
  c.remote_dir = (scratch_ / "remote").string();
  KernelHost host(c, bundle_);
  WorkerReply r = host.run(Lane::Compile, lower_request(""));
  EXPECT_EQ(r.status, WorkerReply::Status::Unreachable);
  EXPECT_NE(r.message.find("not a protocol message"), std::string::npos) << r.message;
  // The bundle was installed by the command host before the worker started.
  bool complete = false;
  for (const auto& e : fs::directory_iterator(c.remote_dir))
    complete |= fs::exists(e.path() / ".complete");
  EXPECT_TRUE(complete);
}

TEST_F(KernelHostTest, CommandHostInstallsOnceAndRuns) {
  HostConfig c = config_;
  c.kind = find_host_kind("command");
  c.command_template = {"sh", "-c", "{command}"};
  c.remote_dir = (scratch_ / "remote dir with 'quote'").string();
  {
    KernelHost host(c, bundle_);
    WorkerReply r = host.run(Lane::Compile, lower_request(""));
    ASSERT_TRUE(r.ok()) << r.message << r.stderr_tail;
  }
  const fs::path installed = fs::path(c.remote_dir) / ("worker-" + bundle_.hash.substr(0, 16));
  ASSERT_TRUE(fs::exists(installed / ".complete"));
  const auto stamp = fs::last_write_time(installed / ".complete");
  KernelHost again(c, bundle_);
  ASSERT_TRUE(again.run(Lane::Compile, lower_request("")).ok());
  EXPECT_EQ(fs::last_write_time(installed / ".complete"), stamp);  // reused, not re-uploaded
}

TEST_F(KernelHostTest, CompileSlotsRunInParallel) {
  // Each job waits (inside the worker) for the other's marker file: only parallel slots finish.
  KernelHost host(config_, bundle_);
  auto job = [&](const std::string& mine, const std::string& other) {
    // A folder, not a file: the worker's source gate refuses opening a file for writing.
    const std::string code = "    import os, time\n    os.mkdir(" +
                             json((scratch_ / mine).string()).dump() +
                             ")\n    t0 = time.time()\n    while not os.path.exists(" +
                             json((scratch_ / other).string()).dump() +
                             ") and time.time() - t0 < 60: time.sleep(0.01)\n";
    return host.run(Lane::Compile, lower_request(code));
  };
  WorkerReply a, b;
  std::thread ta([&] { a = job("a", "b"); });
  std::thread tb([&] { b = job("b", "a"); });
  ta.join();
  tb.join();
  EXPECT_TRUE(a.ok()) << a.message;
  EXPECT_TRUE(b.ok()) << b.message;
  EXPECT_LT(a.body.value("elapsed_s", 99.0), 30.0);
}

// This once hung in CI teardown: two hosts launched workers at the same moment, one worker
// inherited the other's stdout pipe (plain pipe(2) fds, made outside the spawn lock), and the
// first worker's destructor joined a reader that never saw end of file. Pipes are now
// close-on-exec and the destructor stops its readers (see worker_process_test.cpp).
TEST_F(KernelHostTest, PoolSpreadsConcurrentJobsOverHosts) {
  // Two hosts with one timing worker each: two concurrent jobs that wait for each other can only
  // both finish if the pool put them on different hosts.
  HostPool pool;
  for (const char* name : {"vm-a", "vm-b"}) {
    HostConfig c = config_;
    c.name = name;
    c.timing_slots = 1;
    pool.add(std::make_unique<KernelHost>(c, bundle_));
  }
  auto job = [&](const std::string& mine, const std::string& other, std::string* chosen) {
    // A folder, not a file: the worker's source gate refuses opening a file for writing.
    const std::string code = "    import os, time\n    os.mkdir(" +
                             json((scratch_ / mine).string()).dump() +
                             ")\n    t0 = time.time()\n    while not os.path.exists(" +
                             json((scratch_ / other).string()).dump() +
                             ") and time.time() - t0 < 60: time.sleep(0.01)\n";
    return pool.run(Lane::Timing, lower_request(code), {}, std::nullopt, {}, chosen);
  };
  std::string ha, hb;
  WorkerReply a, b;
  std::thread ta([&] { a = job("a", "b", &ha); });
  std::thread tb([&] { b = job("b", "a", &hb); });
  ta.join();
  tb.join();
  EXPECT_TRUE(a.ok()) << a.message;
  EXPECT_TRUE(b.ok()) << b.message;
  EXPECT_NE(ha, hb);
  EXPECT_TRUE(ha == "vm-a" || ha == "vm-b") << ha;
  EXPECT_TRUE(hb == "vm-a" || hb == "vm-b") << hb;
  EXPECT_LT(a.body.value("elapsed_s", 99.0), 30.0);
}

TEST_F(KernelHostTest, UnreachableSshHostSaysWhy) {
  HostConfig c = config_;
  c.kind = find_host_kind("ssh");
  c.destination = "nobody@127.0.0.1";
  c.port = 1;  // nothing listens there
  c.connect_timeout_s = 5;
  KernelHost host(c, bundle_);
  WorkerReply r = host.run(Lane::Compile, lower_request(""));
  EXPECT_EQ(r.status, WorkerReply::Status::Unreachable);
  EXPECT_NE(r.message.find("connection refused"), std::string::npos) << r.message;
}

// ssh's shared connection can outlive a dropped link for a moment: the next worker start rides
// the dying master and ssh exits 255 at once. A stand-in named "ssh" (a command host runs it)
// fails the first worker start that way and runs the rest locally; the start is tried once more
// and the job passes. A second fast failure is not retried again.
TEST_F(KernelHostTest, AWorkerStartOnADyingSharedSshConnectionIsTriedOnceMore) {
  const fs::path bin = scratch_ / "bin";
  fs::create_directories(bin);
  const fs::path count = scratch_ / "worker-starts";
  // Counts the worker starts (the commands with --lane); fails the first FAILURES of them.
  const std::string body = R"(
case "$1" in *--lane*)
  n=$(cat "$COUNT" 2>/dev/null || echo 0)
  echo $((n + 1)) > "$COUNT"
  if [ "$n" -lt "$FAILURES" ]; then
    echo 'mux_client_request_session: read from master failed' >&2
    exit 255
  fi ;;
esac
exec sh -c "$1"
)";
  auto fake_ssh = [&](int failures) {
    std::ofstream(bin / "ssh") << "#!/bin/sh\nCOUNT='" << count.string()
                               << "' FAILURES=" << failures << body;
    fs::permissions(bin / "ssh", fs::perms::owner_all);
    fs::remove(count);
  };
  HostConfig c = config_;
  c.kind = find_host_kind("command");
  c.command_template = {(bin / "ssh").string(), "{command}"};
  c.remote_dir = (scratch_ / "remote").string();

  fake_ssh(1);
  {
    KernelHost host(c, bundle_);
    WorkerReply r = host.run(Lane::Compile, lower_request(""));
    ASSERT_TRUE(r.ok()) << r.message << r.stderr_tail;
    EXPECT_EQ(read_text(count), "2\n");  // the failed start and the one that worked
  }
  fake_ssh(2);
  {
    KernelHost host(c, bundle_);
    WorkerReply r = host.run(Lane::Compile, lower_request(""));
    EXPECT_EQ(r.status, WorkerReply::Status::Unreachable);
    EXPECT_NE(r.message.find("connection lost"), std::string::npos) << r.message;
    EXPECT_EQ(read_text(count), "2\n");  // tried once more, not again
  }
}

// All of a host's ssh workers ride one shared connection: when one of them finds the link lost,
// the idle ones go with it, even while their ssh has not exited yet, so the next job starts
// afresh instead of being sent down the dead link. The stand-in "ssh" runs the command locally
// and, once the drop file exists, exits 255 as ssh does when its connection fails.
TEST_F(KernelHostTest, ALostSshLinkDropsTheIdleWorkersThatShareIt) {
  const fs::path bin = scratch_ / "bin";
  fs::create_directories(bin);
  const fs::path drop = scratch_ / "link-dropped";
  std::ofstream(bin / "ssh") << "#!/bin/sh\nsh -c \"$1\"\nstatus=$?\n[ -e '" << drop.string()
                             << "' ] && exit 255\nexit $status\n";
  fs::permissions(bin / "ssh", fs::perms::owner_all);
  HostConfig c = config_;
  c.kind = find_host_kind("command");
  c.command_template = {(bin / "ssh").string(), "{command}"};
  c.remote_dir = (scratch_ / "remote").string();
  KernelHost host(c, bundle_);
  ASSERT_TRUE(host.run(Lane::Timing, lower_request("")).ok());
  ASSERT_TRUE(host.run(Lane::Compile, lower_request("")).ok());
  ASSERT_EQ(host.live_workers(), 2u);  // both idle, both alive

  std::ofstream(drop) << "";
  WorkerReply lost = host.run(Lane::Compile, crashing_request());
  EXPECT_EQ(lost.status, WorkerReply::Status::Unreachable) << lost.message;
  EXPECT_NE(lost.message.find("connection lost"), std::string::npos) << lost.message;
  EXPECT_EQ(host.live_workers(), 0u);  // the idle timing worker went with the link

  fs::remove(drop);
  WorkerReply next = host.run(Lane::Timing, lower_request(""));
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_EQ(host.live_workers(), 1u);
}

// The local host's workers share the editor's cores: they run at a lower priority than the
// server so interactive requests are served first.
TEST_F(KernelHostTest, LocalWorkersRunAtTheConfiguredNiceness) {
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  KernelHost niced(config_, bundle_);
  WorkerReply hello = niced.hello();
  ASSERT_TRUE(hello.ok()) << hello.message;
  EXPECT_EQ(hello.body.value("nice", -100), std::min(19, own + 10));
  HostConfig plain = config_;
  plain.worker_nice = 0;
  KernelHost unniced(plain, bundle_);
  hello = unniced.hello();
  ASSERT_TRUE(hello.ok()) << hello.message;
  EXPECT_EQ(hello.body.value("nice", -100), own);
}

}  // namespace
}  // namespace mk::tpu
