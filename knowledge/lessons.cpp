// Store: lessons, ranked by effect and recency.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "knowledge/store.h"

namespace mk::knowledge {

using sql::Statement;

int64_t Store::record_lesson(const Lesson& lesson) {
  if (lesson.kernel_class.empty() || lesson.strategy.empty())
    throw std::invalid_argument("a lesson needs a kernel class and a strategy");
  if (!(lesson.effect > 0) || !std::isfinite(lesson.effect))
    throw std::invalid_argument("a lesson's effect is a speedup ratio and must be > 0, got " +
                                std::to_string(lesson.effect));
  Statement s(db_,
              "INSERT INTO lessons (kernel_class, strategy, target, effect, run_id, notes, "
              "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  s.text(lesson.kernel_class).text(lesson.strategy).text(lesson.target).real(lesson.effect);
  s.text(lesson.run_id).text(lesson.notes);
  s.integer(lesson.created_at ? lesson.created_at : static_cast<int64_t>(std::time(nullptr)));
  s.run("record a lesson");
  return db_.last_insert_rowid();
}

std::vector<Lesson> Store::lessons_for(const std::string& kernel_class, const std::string& target,
                                       int limit) {
  std::vector<Lesson> lessons;
  if (limit <= 0) return lessons;
  Statement s(db_,
              "SELECT id, kernel_class, strategy, target, effect, run_id, notes, created_at "
              "FROM lessons WHERE (?1 = '' OR kernel_class = ?1) AND (?2 = '' OR target = ?2)");
  s.text(kernel_class).text(target);
  const double now = static_cast<double>(std::time(nullptr));
  while (s.row()) {
    Lesson l;
    sql::Columns(s) >> l.id >> l.kernel_class >> l.strategy >> l.target >> l.effect >> l.run_id >>
        l.notes >> l.created_at;
    const double age_days = std::max(0.0, (now - static_cast<double>(l.created_at)) / 86400.0);
    // log: a 2x and a 0.5x weigh the same, with opposite signs; recency shrinks both.
    l.rank_score = std::log(l.effect) * std::exp2(-age_days / kLessonHalfLifeDays);
    lessons.push_back(std::move(l));
  }
  std::stable_sort(lessons.begin(), lessons.end(), [](const Lesson& a, const Lesson& b) {
    if (a.rank_score != b.rank_score) return a.rank_score > b.rank_score;
    return a.created_at > b.created_at;
  });
  if (lessons.size() > static_cast<size_t>(limit)) lessons.resize(static_cast<size_t>(limit));
  return lessons;
}

}  // namespace mk::knowledge
