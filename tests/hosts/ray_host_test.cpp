// KernelHost with a ray host's slots, against a stand-in driver (fake_workers/fake_ray_driver.py:
// the driver's command line and protocol, no Ray): a timing actor whose device differs from the
// first one's is refused with both fingerprints, and a job whose node was lost is retried once on
// another slot, which retires the lost one. tests/ray runs the real driver on a real cluster.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "tpu/host/kernel_host.h"
#include "worker_host_fixture.h"

namespace mk::tpu {
namespace {

class RayHostTest : public WorkerHostTest {
 protected:
  void SetUp() override {
    WorkerHostTest::SetUp();
    ::setenv("MAXKERNEL_RAY_DRIVER",
             (repo() / "tests" / "hosts" / "fake_workers" / "fake_ray_driver.py").c_str(), 1);
    ::setenv("FAKE_RAY_STATE", scratch_.c_str(), 1);
    config_.kind = find_host_kind("ray");
    config_.name = "ray:fake";
    config_.address = "fake";
  }
  void TearDown() override {
    for (const char* name : {"MAXKERNEL_RAY_DRIVER", "FAKE_RAY_STATE", "FAKE_RAY_JAX_2",
                             "FAKE_RAY_LOSE_FIRST", "FAKE_RAY_EVAL_S"})
      ::unsetenv(name);
    WorkerHostTest::TearDown();
  }
};

TEST_F(RayHostTest, ATimingActorOnANodeWithAnotherDeviceIsRefused) {
  ::setenv("FAKE_RAY_JAX_2", "0.10.1", 1);
  ::setenv("FAKE_RAY_EVAL_S", "1", 1);
  KernelHost host(config_, bundle_);
  ASSERT_TRUE(host.hello().ok());
  EXPECT_EQ(host.fingerprint(), "cpu/cpu/jax-0.10.0");
  EXPECT_EQ(host.slots(Lane::Timing), 2);  // one per device resource of the cluster
  WorkerReply a, b;
  std::thread ta([&] { a = host.run(Lane::Timing, {{"op", "evaluate"}}); });
  std::thread tb([&] { b = host.run(Lane::Timing, {{"op", "evaluate"}}); });
  ta.join();
  tb.join();
  const WorkerReply& refused = a.ok() ? b : a;
  EXPECT_TRUE(a.ok() != b.ok()) << a.message << " / " << b.message;
  EXPECT_EQ(refused.status, WorkerReply::Status::Unreachable);
  EXPECT_NE(refused.message.find("the Ray node 10.0.0.2 of ray:fake has cpu/cpu/jax-0.10.1, the "
                                 "cluster's first timing worker cpu/cpu/jax-0.10.0"),
            std::string::npos)
      << refused.message;
}

TEST_F(RayHostTest, AJobOnALostNodeIsRetriedOnceOnAnotherSlotWhichRetiresTheLostOne) {
  ::setenv("FAKE_RAY_LOSE_FIRST", "1", 1);
  KernelHost host(config_, bundle_);
  ASSERT_TRUE(host.hello().ok());  // the first timing slot's driver: node 1
  ASSERT_EQ(host.slots(Lane::Timing), 2);
  const WorkerReply reply = host.run(Lane::Timing, {{"op", "evaluate"}});
  ASSERT_TRUE(reply.ok()) << reply.message;
  EXPECT_EQ(reply.body.value("node", 0), 2);  // the retry ran on the other slot's node
  EXPECT_EQ(host.slots(Lane::Timing), 1);     // node 1's slot takes no more jobs
  const WorkerReply next = host.run(Lane::Timing, {{"op", "evaluate"}});
  ASSERT_TRUE(next.ok()) << next.message;
  EXPECT_EQ(next.body.value("node", 0), 2);
}

}  // namespace
}  // namespace mk::tpu
