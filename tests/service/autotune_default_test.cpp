// The automatic autotune phase (SearchParams::kAutotuneAutomatic, the CLI's and the editor's
// default): on a TPU or GPU host a run tunes 8 configurations a round, on a CPU host none; the
// choice is made once and kept with the run, so a resume on another host does not change it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "agents/orchestration/run_store.h"
#include "service/searches.h"

namespace mk::service {
namespace {

class PlatformHost : public tpu::JobRunner {
 public:
  explicit PlatformHost(std::string platform) : platform_(std::move(platform)) {}
  tpu::WorkerReply run(tpu::Lane, nlohmann::json, const std::function<bool()>&,
                       std::optional<std::chrono::milliseconds>, const ProgressFn&,
                       std::string*) override {
    return {tpu::WorkerReply::Status::Failed, nullptr, "not used", ""};
  }
  tpu::WorkerReply hello() override {
    return {tpu::WorkerReply::Status::Ok, {{"ok", true}, {"platform", platform_}}, "", ""};
  }
  std::string fingerprint() override { return platform_ + "/x/jax-0"; }
  std::string name() const override { return platform_; }
  void shutdown() override {}

 private:
  std::string platform_;
};

class AutotuneDefault : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("mk-autotune-default-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite");
    std::filesystem::remove(path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string new_run(agents::RunStore& runs, int autotune_configs) {
    NewSearch search;
    search.file = "k.py";
    search.params.autotune_configs = autotune_configs;
    return create_search(runs, search);
  }
  std::filesystem::path path_;
};

TEST_F(AutotuneDefault, OnADeviceHostEightConfigurationsKeptWithTheRun) {
  agents::RunStore runs(path_);
  const std::string id = new_run(runs, agents::SearchParams::kAutotuneAutomatic);
  PlatformHost tpu("tpu"), cpu("cpu");
  EXPECT_EQ(resolve_autotune_phase(runs, id, tpu), agents::SearchParams::kAutotuneOnDevices);
  EXPECT_EQ(runs.run(id)->params.search.autotune_configs, 8);
  EXPECT_EQ(resolve_autotune_phase(runs, id, cpu), 8);  // a resume elsewhere keeps the choice
  PlatformHost gpu("gpu");
  EXPECT_EQ(resolve_autotune_phase(runs, new_run(runs, -1), gpu), 8);
}

TEST_F(AutotuneDefault, OnACpuHostNoPhaseAndAnExplicitCountIsKept) {
  agents::RunStore runs(path_);
  PlatformHost cpu("cpu"), tpu("tpu");
  const std::string automatic = new_run(runs, agents::SearchParams::kAutotuneAutomatic);
  EXPECT_EQ(resolve_autotune_phase(runs, automatic, cpu), 0);
  EXPECT_EQ(runs.run(automatic)->params.search.autotune_configs, 0);
  EXPECT_EQ(resolve_autotune_phase(runs, automatic, tpu), 0);
  EXPECT_EQ(resolve_autotune_phase(runs, new_run(runs, 0), tpu), 0);  // off stays off
  EXPECT_EQ(resolve_autotune_phase(runs, new_run(runs, 3), cpu), 3);
}

}  // namespace
}  // namespace mk::service
