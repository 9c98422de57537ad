// Which worker touches the device. A TPU admits one process at a time, so a host's compile
// workers run JAX on the CPU (`--lane compile`: lowering for TPU needs no TPU) and only its
// timing workers use the device; the host's hello and fingerprint are a timing worker's, and
// asking for them starts the worker the evaluations then use, not one of its own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "knowledge/store.h"
#include "tpu/host/kernel_host.h"
#include "tpu/jobs/kernel_jobs.h"
#include "worker_host_fixture.h"

namespace mk::tpu {
namespace {

using nlohmann::json;

// Sets an environment variable (inherited by the workers) for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class WorkerLanesTest : public WorkerHostTest {
 protected:
  KernelRequest scale_add() const {
    KernelRequest r;
    r.file = repo() / "tests" / "worker" / "tasks" / "infile" / "scale_add.py";
    r.source = read_text(r.file);
    r.normalized_source = r.source;
    r.task = {{"form", "infile"}, {"path", r.file.string()}};
    r.options = {{"target", "tpu"}, {"seeds", {1}}, {"timing", one_timed_run()}};
    return r;
  }
};

TEST_F(WorkerLanesTest, CompileWorkersKeepJaxOnTheCpuAndTheHostsHelloIsATimingWorkers) {
  // The host's environment sends JAX to a TPU, which this machine does not have: a worker that
  // uses the device cannot start here, one that keeps to the CPU never looks for it.
  const ScopedEnv tpu_only("JAX_PLATFORMS", "tpu");
  KernelHost host(config_, bundle_);
  KernelJobs jobs(host, nullptr);
  const JobResult lowered = jobs.lower(scale_add());
  ASSERT_TRUE(lowered.reply.ok()) << lowered.reply.message << lowered.reply.stderr_tail;
  EXPECT_EQ(host.live_workers(), 1u);

  // A compile worker's hello would say "cpu"; the host's hello is a timing worker's, and that
  // one asks for the TPU.
  const WorkerReply hello = host.hello();
  EXPECT_FALSE(hello.ok());
  EXPECT_NE((hello.message + hello.stderr_tail).find("tpu"), std::string::npos)
      << "[" << hello.message << "] [" << hello.stderr_tail << "]";
  EXPECT_EQ(host.fingerprint(), "unreachable");
  EXPECT_EQ(host.live_workers(), 1u);  // the compile worker, still warm
}

TEST_F(WorkerLanesTest, ATestOnAFreshHostStartsOneWorkerAndItSaysHelloForTheHost) {
  knowledge::Store store(scratch_ / "store.sqlite");
  KernelHost host(config_, bundle_);
  KernelJobs jobs(host, &store);  // with a store, a Test first asks for the host's fingerprint
  const JobResult tested = jobs.test(scale_add(), /*use_cache=*/true);
  ASSERT_TRUE(tested.reply.ok()) << tested.reply.message << tested.reply.stderr_tail;
  EXPECT_TRUE(tested.reply.body.value("correct", false)) << tested.reply.body.dump();
  EXPECT_FALSE(tested.cache_key.empty());
  EXPECT_EQ(host.live_workers(), 1u) << "a worker was started only to say hello";

  const WorkerReply hello = host.hello();
  ASSERT_TRUE(hello.ok()) << hello.message;
  EXPECT_EQ(hello.body.value("lane", std::string()), "timing");
  EXPECT_EQ(hello.body.value("platform", std::string()), "cpu");
  EXPECT_EQ(host.fingerprint().rfind("cpu/", 0), 0u) << host.fingerprint();
}

}  // namespace
}  // namespace mk::tpu
