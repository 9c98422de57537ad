// The timing lane of a host against real workers (python with JAX, CPU): on a cpu host its size
// comes from the first timing worker's hello and evaluations run side by side (interpret time is
// never a speedup); an explicit timingSlots of 1 still runs them one after another on one worker.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tpu/host/host_config.h"
#include "tpu/host/kernel_host.h"
#include "worker_host_fixture.h"

namespace mk::tpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What a candidate left in `dir`: the name of the one folder it made there. Candidates signal
// with folders, not files: the worker's source gate refuses opening a file for writing.
std::string marker_of(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) return entry.path().filename().string();
  return "";
}

class TimingLaneTest : public WorkerHostTest {
 protected:
  // An evaluate of the scale_add task whose candidate, when first traced, marks `mine` as
  // started, waits up to `wait_s` for `other` to start, and records whether it did and which
  // worker ran it (as the name of a folder in `mine`.log). The candidate runs in a child forked
  // from its worker's zygote (docs/worker-protocol.md), so its parent's pid names the worker.
  json evaluate_request(const std::string& mine, const std::string& other, int wait_s) {
    const auto path = [&](const std::string& name) {
      return json((scratch_ / name).string()).dump();
    };
    const std::string prelude =
        "    import os, time\n"
        "    if not os.path.exists(" +
        path(mine + ".log") +
        "):\n"
        "        os.mkdir(" +
        path(mine + ".start") +
        ")\n"
        "        t0 = time.time()\n"
        "        while not os.path.exists(" +
        path(other + ".start") + ") and time.time() - t0 < " + std::to_string(wait_s) +
        ":\n"
        "            time.sleep(0.01)\n"
        "        os.makedirs(os.path.join(" +
        path(mine + ".log") + ", '%d %d' % (os.path.exists(" + path(other + ".start") +
        "), os.getppid())))\n";
    return {{"op", "evaluate"},
            {"source", scale_add_with(prelude)},
            {"filename", (scratch_ / (mine + ".py")).string()},
            {"task", {{"form", "infile"}}},
            {"seeds", {1}},
            {"timing", one_timed_run()}};
  }

  // Runs two evaluates from two threads at once; returns each one's log "SAW_OTHER PID".
  std::pair<std::string, std::string> run_two(KernelHost& host, int wait_s) {
    WorkerReply a, b;
    std::thread ta([&] { a = host.run(Lane::Timing, evaluate_request("a", "b", wait_s)); });
    std::thread tb([&] { b = host.run(Lane::Timing, evaluate_request("b", "a", wait_s)); });
    ta.join();
    tb.join();
    EXPECT_TRUE(a.ok()) << a.message << a.stderr_tail;
    EXPECT_TRUE(b.ok()) << b.message << b.stderr_tail;
    EXPECT_TRUE(a.body.value("correct", false)) << a.body.dump();
    EXPECT_TRUE(b.body.value("correct", false)) << b.body.dump();
    return {marker_of(scratch_ / "a.log"), marker_of(scratch_ / "b.log")};
  }
};

std::string pid_of(const std::string& log) {
  return log.substr(log.find(' ') + 1);
}

TEST(AutomaticTimingSlots, OnePerDeviceOnTpuAndGpuCompileSlotsCappedByCoresOnCpu) {
  EXPECT_EQ(automatic_timing_slots({{"platform", "tpu"}, {"cpu_count", 96}}, 4), 1);
  EXPECT_EQ(automatic_timing_slots({{"platform", "gpu"}, {"cpu_count", 32}}, 4), 1);
  EXPECT_EQ(automatic_timing_slots({{"platform", "cpu"}, {"cpu_count", 16}}, 4), 4);
  EXPECT_EQ(automatic_timing_slots({{"platform", "cpu"}, {"cpu_count", 2}}, 4), 2);
  EXPECT_EQ(automatic_timing_slots({{"platform", "cpu"}, {"cpu_count", 1}}, 4), 1);
  EXPECT_EQ(automatic_timing_slots({{"platform", "cpu"}}, 3), 3);  // no core count: compile slots
  EXPECT_EQ(automatic_timing_slots(json(), 3), 1);                 // no hello: as a device
  // A Ray driver's hello: one slot per device resource of the cluster, whatever the platform.
  EXPECT_EQ(automatic_timing_slots({{"platform", "tpu"}, {"ray", {{"devices", 8}}}}, 2), 8);
  EXPECT_EQ(automatic_timing_slots({{"platform", "cpu"}, {"ray", {{"devices", 2}}}}, 4), 2);
}

TEST(AutomaticTimingSlots, TimingSlotsAreAutomaticUnlessTheHostDefinitionSetsThem) {
  std::string error;
  auto automatic = parse_host_config(R"({"name": "here"})", error);
  ASSERT_TRUE(automatic) << error;
  EXPECT_EQ(automatic->timing_slots, 0);
  auto explicit_one = parse_host_config(R"({"timingSlots": 1})", error);
  ASSERT_TRUE(explicit_one) << error;
  EXPECT_EQ(explicit_one->timing_slots, 1);
  EXPECT_FALSE(parse_host_config(R"({"timingSlots": 0})", error));
  EXPECT_NE(error.find("at least 1"), std::string::npos) << error;
}

TEST_F(TimingLaneTest, CpuHostRunsTwoEvaluatesAtOnce) {
  KernelHost host(config_, bundle_);
  EXPECT_EQ(host.slots(Lane::Timing), 1);  // nothing known yet: no worker started
  EXPECT_EQ(host.live_workers(), 0u);
  const auto [a, b] = run_two(host, 120);
  const WorkerReply hello = host.hello();
  ASSERT_TRUE(hello.ok());
  ASSERT_EQ(hello.body.value("platform", std::string()), "cpu");
  const int expected = automatic_timing_slots(hello.body, config_.compile_slots);
  EXPECT_EQ(host.slots(Lane::Timing), expected);
  if (expected < 2) GTEST_SKIP() << "declared: one core: the lane stays at one worker";
  // Each candidate saw the other start while it waited: the two evaluations overlapped, in two
  // worker processes; and no worker was started only to say hello.
  EXPECT_EQ(a[0], '1') << a;
  EXPECT_EQ(b[0], '1') << b;
  EXPECT_NE(pid_of(a), pid_of(b));
  EXPECT_EQ(host.live_workers(), 2u);
}

TEST_F(TimingLaneTest, ExplicitTimingSlotsOneStillSerialises) {
  HostConfig c = config_;
  c.timing_slots = 1;
  KernelHost host(c, bundle_);
  // The first candidate waits a little for the second; it cannot come, both run on one worker.
  const auto [a, b] = run_two(host, 3);
  EXPECT_EQ(host.slots(Lane::Timing), 1);
  EXPECT_EQ(pid_of(a), pid_of(b));
  EXPECT_TRUE(a[0] == '0' || b[0] == '0') << a << " / " << b;  // the first never saw the second
  EXPECT_EQ(host.live_workers(), 1u);
}

}  // namespace
}  // namespace mk::tpu
