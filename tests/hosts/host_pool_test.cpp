// HostPool as a JobRunner against real worker processes: it names the host that ran each job,
// sets an unreachable host aside and sends its jobs to the others, keeps a lone host's own
// error, and refuses hosts that report different devices (their timings must not be mixed).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tpu/host/host_pool.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::tpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class HostPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spdlog::default_logger();  // before worker threads log (see kernel_host_test.cpp)
    std::string error;
    auto b = load_worker_bundle(fs::path(MK_SOURCE_DIR) / "tpu" / "worker", error);
    ASSERT_TRUE(b) << error;
    bundle_ = *b;
    scratch_ = fs::temp_directory_path() /
               ("mk-pool-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(scratch_);
  }
  void TearDown() override { fs::remove_all(scratch_); }

  HostConfig local(const std::string& name) const {
    HostConfig c;
    c.name = name;
    c.python = default_local_python();
    c.compile_slots = 1;
    c.timing_slots = 1;
    return c;
  }
  // An ssh host on a port where nothing listens: it can never start a worker.
  HostConfig closed_port(const std::string& name) const {
    HostConfig c = local(name);
    c.kind = find_host_kind("ssh");
    c.destination = "nobody@127.0.0.1";
    c.port = 1;
    c.connect_timeout_s = 5;
    c.remote_dir = (scratch_ / "remote").string();
    return c;
  }
  KernelRequest scale_add() const {
    KernelRequest r;
    r.file = fs::path(MK_SOURCE_DIR) / "tests" / "worker" / "tasks" / "infile" / "scale_add.py";
    std::ifstream in(r.file);
    std::stringstream text;
    text << in.rdbuf();
    r.source = text.str();
    r.normalized_source = r.source;
    r.task = {{"form", "infile"}, {"path", r.file.string()}};
    r.options["target"] = "tpu";
    return r;
  }

  WorkerBundle bundle_;
  fs::path scratch_;
};

TEST_F(HostPoolTest, KernelJobsOverAPoolNameTheHostThatRanEachJob) {
  HostPool pool;
  pool.add(std::make_unique<KernelHost>(local("a"), bundle_));
  pool.add(std::make_unique<KernelHost>(local("b"), bundle_));
  EXPECT_EQ(pool.name(), "a,b");
  EXPECT_EQ(pool.max_slots(Lane::Compile), 2);
  KernelJobs jobs(pool, nullptr);  // the same KernelJobs a single KernelHost is given
  const JobResult r = jobs.lower(scale_add());
  ASSERT_TRUE(r.reply.ok()) << r.reply.message;
  EXPECT_EQ(r.host, "a");  // idle pool: ties go to the first host
}

TEST_F(HostPoolTest, AnUnreachableHostIsSetAsideAndItsJobsGoToTheOthers) {
  HostPool pool;
  pool.add(std::make_unique<KernelHost>(closed_port("dead"), bundle_));
  pool.add(std::make_unique<KernelHost>(local("alive"), bundle_));
  KernelJobs jobs(pool, nullptr);
  // "dead" comes first, so the first job goes there, fails to start a worker, and is re-sent.
  const JobResult first = jobs.lower(scale_add());
  ASSERT_TRUE(first.reply.ok()) << first.reply.message;
  EXPECT_EQ(first.host, "alive");
  const std::vector<std::string> aside = pool.set_aside();
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(aside[0].rfind("dead: ", 0), 0u) << aside[0];
  EXPECT_NE(aside[0].find("connection refused"), std::string::npos) << aside[0];
  // Later jobs go straight to the host still in use.
  EXPECT_EQ(jobs.lower(scale_add()).host, "alive");
  EXPECT_EQ(pool.max_slots(Lane::Compile), 1);
}

TEST_F(HostPoolTest, APoolOfOneKeepsItsHostsOwnError) {
  HostPool pool;
  pool.add(std::make_unique<KernelHost>(closed_port("dead"), bundle_));
  std::string ran_on = "unset";
  const WorkerReply r = pool.run(Lane::Compile, {{"op", "hello"}}, {}, std::nullopt, {}, &ran_on);
  EXPECT_EQ(r.status, WorkerReply::Status::Unreachable);
  EXPECT_NE(r.message.find("connection refused"), std::string::npos) << r.message;
  EXPECT_EQ(ran_on, "dead");
  EXPECT_TRUE(pool.set_aside().empty());  // never the last host: its error is the answer
  EXPECT_EQ(pool.fingerprint(), "unreachable");
}

TEST_F(HostPoolTest, VerifySetsAsideTheDeadAndAgreesOnOneFingerprint) {
  HostPool pool;
  pool.add(std::make_unique<KernelHost>(local("a"), bundle_));
  pool.add(std::make_unique<KernelHost>(closed_port("dead"), bundle_));
  pool.add(std::make_unique<KernelHost>(local("b"), bundle_));
  std::string error;
  ASSERT_TRUE(pool.verify(error)) << error;
  EXPECT_EQ(pool.set_aside().size(), 1u);
  EXPECT_EQ(pool.fingerprint(), pool.host(0).fingerprint());
  EXPECT_EQ(pool.fingerprint(), pool.host(2).fingerprint());
  EXPECT_NE(pool.fingerprint().find("/jax-"), std::string::npos);
  EXPECT_EQ(pool.fingerprint().find("jax-?"), std::string::npos) << pool.fingerprint();
}

TEST_F(HostPoolTest, HostsThatReportDifferentDevicesAreRefused) {
  // Host "other" runs the same python with a different JAX version reported in its hello.
  const fs::path site = scratch_ / "site";
  fs::create_directories(site);
  std::ofstream(site / "sitecustomize.py") << "import jax\njax.__version__ = '0.0.1+other'\n";
  const fs::path wrapper = scratch_ / "other-python";
  std::ofstream(wrapper) << "#!/bin/sh\nexec env PYTHONPATH=" << site.string() << " "
                         << default_local_python() << " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  HostConfig other = local("other");
  other.python = wrapper.string();

  HostPool pool;
  pool.add(std::make_unique<KernelHost>(local("a"), bundle_));
  pool.add(std::make_unique<KernelHost>(other, bundle_));
  std::string error;
  EXPECT_FALSE(pool.verify(error));
  EXPECT_NE(error.find("hosts a ("), std::string::npos) << error;
  EXPECT_NE(error.find("and other (cpu/cpu/jax-0.0.1+other) differ"), std::string::npos) << error;
  // No cache key under a mixed pool: nothing is cached as if one device had measured it.
  EXPECT_EQ(pool.fingerprint(), "unreachable");
}

}  // namespace
}  // namespace mk::tpu
