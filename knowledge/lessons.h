// Lessons: what a strategy did for a class of kernel on a TPU generation, recorded after each
// measured run so later plans start from what worked (and avoid what did not).
#pragma once

#include <cstdint>
#include <string>

namespace mk::knowledge {

struct Lesson {
  std::string kernel_class;  // see kernel_class.h: "matmul", "reduction", ...
  std::string strategy;      // e.g. "f32 accumulator in VMEM scratch, K innermost arbitrary"
  std::string target;        // TPU generation name, e.g. "v5e" ("" = unknown)
  double effect = 1.0;       // speedup ratio old time / new time: > 1 helped, < 1 hurt
  std::string run_id;        // the run or graph node it came from
  std::string notes;
  int64_t created_at = 0;  // unix seconds; 0 when recording = now
  int64_t id = 0;          // set by the store
  double rank_score = 0;   // set by lessons_for: log(effect) weighted by recency
};

// Half-life of a lesson's weight in lessons_for: older results count less (libraries and
// compilers change), but never flip sign.
constexpr double kLessonHalfLifeDays = 90.0;

}  // namespace mk::knowledge
