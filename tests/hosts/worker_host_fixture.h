// The set-up the host GoogleTests share: the worker bundle from the source tree, a local host
// config on the project's python (JAX, CPU), a scratch directory per test, and the scale_add
// task with code put at the start of its candidate (run when the candidate is traced).
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tpu/host/host_config.h"
#include "tpu/host/worker_bundle.h"

namespace mk::tpu {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class WorkerHostTest : public ::testing::Test {
 protected:
  static std::filesystem::path repo() { return std::filesystem::path(MK_SOURCE_DIR); }

  void SetUp() override {
    // Create spdlog's registry here, as the binaries' main() does, before worker threads log:
    // its lazy first use from two threads inside the uninstrumented library is a TSan report.
    spdlog::default_logger();
    std::string error;
    auto b = load_worker_bundle(repo() / "tpu" / "worker", error);
    ASSERT_TRUE(b) << error;
    bundle_ = *b;
    config_.python = default_local_python();
    scratch_ = std::filesystem::temp_directory_path() /
               ("mk-host-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(scratch_);
  }
  void TearDown() override { std::filesystem::remove_all(scratch_); }

  // tests/worker/tasks/infile/scale_add.py with `prelude` (indented lines) first in candidate().
  static std::string scale_add_with(const std::string& prelude) {
    std::string src = read_text(repo() / "tests" / "worker" / "tasks" / "infile" / "scale_add.py");
    const std::string anchor = "def candidate(x, y):\n";
    src.replace(src.find(anchor), anchor.size(), anchor + prelude);
    return src;
  }

  // One timed run, no warm-up: the tests check who runs what, not how fast.
  static nlohmann::json one_timed_run() {
    return {
        {"warmup", 0}, {"min_runs", 1}, {"max_runs", 1}, {"min_seconds", 0}, {"max_seconds", 0}};
  }

  HostConfig config_;
  WorkerBundle bundle_;
  std::filesystem::path scratch_;
};

}  // namespace mk::tpu
