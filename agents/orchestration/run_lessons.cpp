#include "agents/orchestration/run_lessons.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "agents/orchestration/selection.h"
#include "knowledge/kernel_class.h"

namespace mk::agents {

std::string kernel_class_of(const pallas::Kernel& kernel, const std::string& file_stem) {
  knowledge::KernelFacts facts;
  facts.names = {kernel.name, kernel.enclosing_function, file_stem};
  for (const pallas::Operand& op : kernel.inputs)
    if (op.array_shape) facts.input_ranks.push_back(static_cast<int>(op.array_shape->size()));
  for (const pallas::Operand& op : kernel.outputs)
    if (op.array_shape) facts.output_ranks.push_back(static_cast<int>(op.array_shape->size()));
  if (kernel.dimension_semantics)
    for (const std::string& s : *kernel.dimension_semantics)
      if (s == "arbitrary") facts.has_arbitrary_axis = true;
  return knowledge::kernel_class(facts);
}

int record_run_lessons(knowledge::Store& store, const RunRecord& run,
                       const std::vector<NodeRecord>& nodes, const std::string& kernel_class) {
  const NodeRecord* best = best_node(nodes);
  if (!best || best->id == 0) return 0;
  std::map<int64_t, const NodeRecord*> ids;
  for (const NodeRecord& n : nodes) ids[n.id] = &n;
  int recorded = 0;
  for (const NodeRecord* cur = best; cur && cur->parent;) {
    auto parent = ids.find(*cur->parent);
    if (parent == ids.end()) break;
    const NodeRecord* p = parent->second;
    const bool measurable = cur->speedup && p->speedup && *p->speedup > 0 && *cur->speedup > 0 &&
                            std::isfinite(*cur->speedup / *p->speedup);
    if (measurable) {
      knowledge::Lesson lesson;
      lesson.kernel_class = kernel_class;
      lesson.strategy = cur->strategy + ": " + cur->description;
      lesson.target = run.target;
      lesson.effect = *cur->speedup / *p->speedup;
      lesson.run_id = run.id + "#" + std::to_string(cur->id);
      lesson.notes = run.score_kind;
      store.record_lesson(lesson);
      ++recorded;
    }
    cur = p;
  }
  return recorded;
}

std::string mismatch_pattern_summary(const std::string& failure) {
  std::istringstream in(failure);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find("pattern (");
    if (at == std::string::npos) continue;
    std::string part = line.substr(at + 9);
    if (const auto close = part.find("): "); close != std::string::npos)
      part = part.substr(0, close) + ": " + part.substr(close + 3);
    if (part.size() > 160) part = part.substr(0, 157) + "...";
    out += (out.empty() ? "" : "; ") + part;
  }
  if (out.empty()) out = failure.substr(0, failure.find('\n')).substr(0, 200);
  return out;
}

std::string record_debug_lesson(knowledge::Store& store, const std::string& kernel_class,
                                const std::string& target, const std::string& failure,
                                const std::string& fix) {
  knowledge::Lesson lesson;
  lesson.kernel_class = kernel_class;
  lesson.strategy = "a wrong result (" + mismatch_pattern_summary(failure) +
                    ") was fixed by changing: " + (fix.empty() ? "(no line)" : fix.substr(0, 400));
  lesson.target = target;
  lesson.effect = 1.0;
  lesson.notes = "correctness fix";
  store.record_lesson(lesson);
  return lesson.strategy;
}

std::vector<std::string> lesson_passages(knowledge::Store& store, const std::string& kernel_class,
                                         const std::string& target, int limit) {
  std::vector<std::string> out;
  for (const knowledge::Lesson& l : store.lessons_for(kernel_class, target, limit)) {
    if (l.notes == "correctness fix") {
      out.push_back("Lesson from an earlier run on a " + l.kernel_class + " kernel (" + l.target +
                    "): " + l.strategy + ".");
      continue;
    }
    char effect[32];
    std::snprintf(effect, sizeof effect, "%.2fx", l.effect);
    out.push_back("Lesson from an earlier run on a " + l.kernel_class + " kernel (" + l.target +
                  "): " + l.strategy + " gave " + effect +
                  (l.notes.empty() ? "" : " (" + l.notes + ")") + ".");
  }
  return out;
}

}  // namespace mk::agents
