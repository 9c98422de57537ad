// The worker bundle: every .py of the worker package, subpackages included, by relative path
// (what the content hash covers and what the tar sent to an ssh host holds).
#include "tpu/host/worker_bundle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mk::tpu {
namespace {

namespace fs = std::filesystem;

class WorkerBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mk-bundle-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  fs::path dir_;
};

TEST_F(WorkerBundleTest, ListsSubpackagesByRelativePathSortedWithoutCaches) {
  write("maxkernel_worker.py", "from pkg.judge import run\n");
  write("pkg/__init__.py", "");
  write("pkg/judge/run.py", "x = 1\n");
  write("pkg/judge/__pycache__/run.cpython-311.py", "stale\n");
  write("pkg/README.md", "not python\n");
  write(".ruff_cache/0.1/cache.py", "not the worker\n");
  std::string error;
  const auto b = load_worker_bundle(dir_, error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->files, (std::vector<std::string>{"maxkernel_worker.py", "pkg/__init__.py",
                                                "pkg/judge/run.py"}));
}

TEST_F(WorkerBundleTest, HashCoversFilesInSubpackages) {
  write("maxkernel_worker.py", "import pkg\n");
  write("pkg/judge/run.py", "x = 1\n");
  std::string error;
  const auto before = load_worker_bundle(dir_, error);
  ASSERT_TRUE(before) << error;
  write("pkg/judge/run.py", "x = 2\n");
  const auto edited = load_worker_bundle(dir_, error);
  ASSERT_TRUE(edited) << error;
  EXPECT_NE(before->hash, edited->hash);
  // The same content at another path is another bundle (a host unpacks by path).
  fs::rename(dir_ / "pkg" / "judge", dir_ / "pkg" / "judged");
  const auto moved = load_worker_bundle(dir_, error);
  ASSERT_TRUE(moved) << error;
  EXPECT_NE(edited->hash, moved->hash);
}

TEST_F(WorkerBundleTest, RefusesADirectoryWithoutTheEntry) {
  write("pkg/maxkernel_worker.py", "# not at the top\n");
  std::string error;
  EXPECT_FALSE(load_worker_bundle(dir_, error));
  EXPECT_NE(error.find("maxkernel_worker.py"), std::string::npos);
}

}  // namespace
}  // namespace mk::tpu
