// Lessons (ranked by effect and recency) and the kernel class helper.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>

#include "knowledge/kernel_class.h"
#include "knowledge/store.h"

namespace mk::knowledge {
namespace {

namespace fs = std::filesystem;

class LessonStore : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("mk-lessons-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite");
    fs::remove(path_);
  }
  void TearDown() override {
    fs::remove(path_);
    fs::remove(path_.string() + "-wal");
    fs::remove(path_.string() + "-shm");
  }
  int64_t record(Store& s, const std::string& strategy, double effect, double age_days,
                 const std::string& kernel_class = "matmul", const std::string& target = "v5e") {
    Lesson l;
    l.kernel_class = kernel_class;
    l.strategy = strategy;
    l.target = target;
    l.effect = effect;
    l.run_id = "run-" + strategy;
    l.created_at =
        static_cast<int64_t>(std::time(nullptr)) - static_cast<int64_t>(age_days * 86400);
    return s.record_lesson(l);
  }
  fs::path path_;
};

TEST_F(LessonStore, RanksByEffectAndRecency) {
  Store s(path_);
  record(s, "old-2x", 2.0, 365);
  record(s, "new-2x", 2.0, 1);
  record(s, "new-1.3x", 1.3, 0);
  record(s, "slowdown", 0.5, 0);
  record(s, "week-3x", 3.0, 7);
  const auto lessons = s.lessons_for("matmul", "v5e", 10);
  ASSERT_EQ(lessons.size(), 5u);
  EXPECT_EQ(lessons[0].strategy, "week-3x");
  EXPECT_EQ(lessons[1].strategy, "new-2x");  // a recent 2x outranks the same 2x a year ago
  EXPECT_EQ(lessons[2].strategy, "new-1.3x");
  EXPECT_EQ(lessons[3].strategy, "old-2x");
  EXPECT_EQ(lessons[4].strategy, "slowdown");  // anything that hurt comes last
  EXPECT_LT(lessons[4].rank_score, 0);
  EXPECT_EQ(lessons[0].run_id, "run-week-3x");
  EXPECT_EQ(s.lessons_for("matmul", "v5e", 2).size(), 2u);
}

TEST_F(LessonStore, FiltersByClassAndTargetWithEmptyMeaningAny) {
  Store s(path_);
  record(s, "a", 1.5, 0, "matmul", "v5e");
  record(s, "b", 1.5, 0, "matmul", "v6e");
  record(s, "c", 1.5, 0, "reduction", "v5e");
  EXPECT_EQ(s.lessons_for("matmul", "v5e", 10).size(), 1u);
  EXPECT_EQ(s.lessons_for("matmul", "", 10).size(), 2u);
  EXPECT_EQ(s.lessons_for("", "v5e", 10).size(), 2u);
  EXPECT_EQ(s.lessons_for("", "", 10).size(), 3u);
  EXPECT_TRUE(s.lessons_for("attention", "", 10).empty());
}

TEST_F(LessonStore, RejectsMeaninglessLessons) {
  Store s(path_);
  Lesson l;
  l.kernel_class = "matmul";
  l.strategy = "tiles";
  for (double bad : {0.0, -1.0, std::nan("")}) {
    l.effect = bad;
    EXPECT_THROW(s.record_lesson(l), std::invalid_argument) << bad;
  }
  l.effect = 1.2;
  l.strategy = "";
  EXPECT_THROW(s.record_lesson(l), std::invalid_argument);
  EXPECT_TRUE(s.lessons_for("", "", 10).empty());
}

TEST(KernelClass, NamesDecideWhenTheySayWhatTheKernelIs) {
  EXPECT_EQ(kernel_class({{"flash_attention_fwd"}, {4, 4, 4}, {4}, true}), "attention");
  EXPECT_EQ(kernel_class({{"FlashAttnKernel"}, {}, {}, false}), "attention");
  EXPECT_EQ(kernel_class({{"matmul_kernel", "tiled_matmul"}, {2, 2}, {2}, true}), "matmul");
  EXPECT_EQ(kernel_class({{"bmm_bf16"}, {3, 3}, {3}, false}), "matmul");
  EXPECT_EQ(kernel_class({{"rms_norm_kernel"}, {2, 1}, {2}, false}), "normalization");
  EXPECT_EQ(kernel_class({{"layernorm"}, {2}, {2}, false}), "normalization");
  EXPECT_EQ(kernel_class({{"softmax_kernel"}, {2}, {2}, false}), "softmax");
  EXPECT_EQ(kernel_class({{"row_sum"}, {2}, {1}, false}), "reduction");
  EXPECT_EQ(kernel_class({{"add_relu"}, {2, 2}, {2}, false}), "elementwise");
  EXPECT_EQ(kernel_class({{"conv2d_nhwc"}, {4, 4}, {4}, true}), "convolution");
}

TEST(KernelClass, RanksDecideWhenNamesDoNot) {
  // Two matrices, a carried axis: a K loop.
  EXPECT_EQ(kernel_class({{"kernel", "my_op"}, {2, 2}, {2}, true}), "matmul");
  // Output rank below the input rank.
  EXPECT_EQ(kernel_class({{"kernel"}, {3}, {2}, false}), "reduction");
  EXPECT_EQ(kernel_class({{"kernel"}, {2, 2}, {2}, false}), "elementwise");
  EXPECT_EQ(kernel_class({{"kernel"}, {1, 2}, {2}, false}), "other");
  EXPECT_EQ(kernel_class({{"kernel"}, {}, {}, false}), "other");
  // Words inside other words do not count: "summary" is not "sum", "madd" is not "add".
  EXPECT_EQ(kernel_class({{"summary_madd"}, {2}, {2}, false}), "elementwise");
}

}  // namespace
}  // namespace mk::knowledge
