// Host configuration, quoting, content hashing, task location and cache keys (no processes).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tpu/host/content_hash.h"
#include "tpu/host/host_config.h"
#include "tpu/host/ray_driver.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::tpu {
namespace {

TEST(ContentHash, MatchesKnownSha256Vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(ShellQuote, NeutralisesMetacharacters) {
  EXPECT_EQ(shell_quote("plain-name_1.py"), "plain-name_1.py");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(touch x);`y`"), "'$(touch x);`y`'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_command({"python3", "-u", "dir with space/w.py"}),
            "python3 -u 'dir with space/w.py'");
}

TEST(HostConfig, SshArgvUsesBatchModeTimeoutAndSharing) {
  HostConfig h;
  h.kind = find_host_kind("ssh");
  h.destination = "me@tpu-vm";
  h.port = 2222;
  h.identity_file = "/k/id";
  h.connect_timeout_s = 7;
  const auto argv = remote_argv(h, "echo hi");
  const std::string joined = [&] {
    std::string s;
    for (const auto& a : argv) s += a + "|";
    return s;
  }();
  EXPECT_EQ(argv.front(), "ssh");
  EXPECT_NE(joined.find("BatchMode=yes"), std::string::npos);
  EXPECT_NE(joined.find("ConnectTimeout=7"), std::string::npos);
  EXPECT_NE(joined.find("ControlMaster=auto"), std::string::npos);
  EXPECT_NE(joined.find("|-p|2222|"), std::string::npos);
  EXPECT_NE(joined.find("|-i|/k/id|"), std::string::npos);
  // The destination follows "--", so a destination can never be read as an option.
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[argv.size() - 3], "--");
  EXPECT_EQ(argv[argv.size() - 2], "me@tpu-vm");
  EXPECT_EQ(argv.back(), "echo hi");
}

TEST(HostConfig, CommandTemplateGetsTheCommandAsOneArgument) {
  HostConfig h;
  h.kind = find_host_kind("command");
  h.command_template = {"gcloud", "compute", "tpus", "tpu-vm", "ssh", "vm", "--command={command}"};
  const auto argv = remote_argv(h, "python3 -u 'a b.py'");
  EXPECT_EQ(argv.back(), "--command=python3 -u 'a b.py'");
  EXPECT_EQ(argv.size(), h.command_template.size());
}

TEST(HostConfig, ParsesAndValidates) {
  std::string error;
  auto ok = parse_host_config(R"({"name": "v5e", "kind": "ssh", "destination": "u@h", "port": 22,
                                  "sshOptions": ["StrictHostKeyChecking=no"], "compileSlots": 3})",
                              error);
  ASSERT_TRUE(ok) << error;
  EXPECT_EQ(ok->kind->name(), "ssh");
  EXPECT_EQ(ok->compile_slots, 3);
  EXPECT_EQ(ok->ssh_options.size(), 1u);

  EXPECT_FALSE(parse_host_config(R"({"kind": "ssh"})", error));
  EXPECT_NE(error.find("destination"), std::string::npos);
  EXPECT_FALSE(parse_host_config(R"({"kind": "command", "command": ["sh", "-c", "x"]})", error));
  EXPECT_NE(error.find("{command}"), std::string::npos);
  EXPECT_FALSE(parse_host_config(R"({"kind": "telnet"})", error));
  EXPECT_EQ(error, "host 'local': kind must be local, ssh, command or ray, not 'telnet'");
  EXPECT_FALSE(parse_host_config("[1, 2", error));
  EXPECT_FALSE(parse_host_config(R"({"timingSlots": 0})", error));
}

TEST(HostConfig, WorkersOnTheLocalHostRunNicedByDefault) {
  std::string error;
  auto local = parse_host_config(R"({"name": "here"})", error);
  ASSERT_TRUE(local) << error;
  EXPECT_EQ(local->effective_worker_nice(), 10);
  auto remote = parse_host_config(R"({"kind": "ssh", "destination": "u@h"})", error);
  ASSERT_TRUE(remote) << error;
  EXPECT_EQ(remote->effective_worker_nice(), 0);
  auto chosen =
      parse_host_config(R"({"kind": "ssh", "destination": "u@h", "workerNice": 5})", error);
  ASSERT_TRUE(chosen) << error;
  EXPECT_EQ(chosen->effective_worker_nice(), 5);
  EXPECT_FALSE(parse_host_config(R"({"workerNice": 20})", error));
  EXPECT_NE(error.find("workerNice"), std::string::npos);
  EXPECT_FALSE(parse_host_config(R"({"workerNice": -1})", error));
}

TEST(HostConfig, RayHostsFromADefinitionOrFromTheirName) {
  std::string error;
  auto defined = parse_host_config(
      R"({"name": "pod", "kind": "ray", "address": "10.0.0.2:6379", "deviceResource": "GPU"})",
      error);
  ASSERT_TRUE(defined) << error;
  EXPECT_EQ(defined->kind->name(), "ray");
  EXPECT_EQ(defined->address, "10.0.0.2:6379");
  EXPECT_EQ(defined->device_resource, "GPU");
  EXPECT_EQ(defined->effective_worker_nice(), 0);  // nothing of the editor's runs there
  EXPECT_FALSE(parse_host_config(R"({"name": "pod", "kind": "ray"})", error));
  EXPECT_NE(error.find("address"), std::string::npos) << error;
  EXPECT_FALSE(
      parse_host_config(R"({"kind": "ray", "address": "auto", "deviceResource": ""})", error));

  auto named = ray_host_from_name("ray:127.0.0.1:6379");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->name, "ray:127.0.0.1:6379");
  EXPECT_EQ(named->address, "127.0.0.1:6379");
  EXPECT_EQ(named->device_resource, "TPU");
  EXPECT_FALSE(ray_host_from_name("ray:"));
  EXPECT_FALSE(ray_host_from_name("tpu-a"));
}

TEST(HostConfig, ARaySlotIsTheLocalDriverForItsLane) {
  auto host = ray_host_from_name("ray:auto");
  ASSERT_TRUE(host);
  host->python = "/venv/bin/python";
  host->start_timeout = std::chrono::seconds(40);
  WorkerBundle bundle;
  bundle.directory = "/src/tpu/worker";
  const std::vector<std::string> argv = ray_driver_argv(*host, bundle, "timing");
  const std::vector<std::string> want = {"/venv/bin/python",
                                         "-u",
                                         "/src/tpu/ray/maxkernel_ray_driver.py",
                                         "--address",
                                         "auto",
                                         "--lane",
                                         "timing",
                                         "--nice",
                                         "0",
                                         "--device-resource",
                                         "TPU",
                                         "--bundle",
                                         "/src/tpu/worker",
                                         "--placement-timeout",
                                         "30"};
  EXPECT_EQ(argv, want);
}

class TaskLocation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mk-task-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(TaskLocation, PrefersYamlThenBaselineThenInFile) {
  write("k.py", "x = 1\n");
  std::string reason;
  EXPECT_FALSE(locate_task(dir_ / "k.py", false, reason));
  EXPECT_NE(reason.find("make_inputs"), std::string::npos);
  EXPECT_EQ((*locate_task(dir_ / "k.py", true, reason))["form"], "infile");
  write("baseline.py", "x = 1\n");
  EXPECT_EQ((*locate_task(dir_ / "k.py", true, reason))["form"], "jaxbench");
  // baseline.py is the reference, not a candidate of itself
  EXPECT_EQ((*locate_task(dir_ / "baseline.py", true, reason))["form"], "infile");
  write("kernel_task.yaml", "rtol: 1e-3\n");
  EXPECT_EQ((*locate_task(dir_ / "k.py", true, reason))["form"], "maxkernel");
}

TEST_F(TaskLocation, CacheKeyFollowsCodeAndReferenceButNotFormatting) {
  write("baseline.py", "def workload(x):\n  return x\n");
  KernelRequest r;
  r.file = dir_ / "k.py";
  r.normalized_source = "def f():\n  return 1\n";
  r.task = {{"form", "jaxbench"}, {"baseline", (dir_ / "baseline.py").string()}};
  const std::string a = evaluation_cache_key(r, "cpu/cpu/jax-0.10.2");
  EXPECT_EQ(a, evaluation_cache_key(r, "cpu/cpu/jax-0.10.2"));
  EXPECT_NE(a, evaluation_cache_key(r, "tpu/TPU v5 lite/jax-0.10.2"));  // another host
  KernelRequest changed = r;
  changed.normalized_source = "def f():\n  return 2\n";
  EXPECT_NE(a, evaluation_cache_key(changed, "cpu/cpu/jax-0.10.2"));
  KernelRequest seeded = r;
  seeded.options["seeds"] = {1, 2};
  EXPECT_NE(a, evaluation_cache_key(seeded, "cpu/cpu/jax-0.10.2"));
  // The extra shapes decide the verdict too: another set, or the same set not required, is
  // another evaluation.
  KernelRequest shaped = r;
  shaped.options["extra_shapes"] = {{"cases", {{{"name", "ragged"}, {"sizes", {{"512", 384}}}}}},
                                    {"required", true}};
  const std::string with_shapes = evaluation_cache_key(shaped, "cpu/cpu/jax-0.10.2");
  EXPECT_NE(a, with_shapes);
  shaped.options["extra_shapes"]["cases"][0]["sizes"]["512"] = 256;
  EXPECT_NE(with_shapes, evaluation_cache_key(shaped, "cpu/cpu/jax-0.10.2"));
  shaped.options["extra_shapes"]["cases"][0]["sizes"]["512"] = 384;
  shaped.options["extra_shapes"]["required"] = false;
  EXPECT_NE(with_shapes, evaluation_cache_key(shaped, "cpu/cpu/jax-0.10.2"));
  write("baseline.py", "def workload(x):\n  return 2 * x\n");  // the frozen reference changed
  EXPECT_NE(a, evaluation_cache_key(r, "cpu/cpu/jax-0.10.2"));
}

}  // namespace
}  // namespace mk::tpu
