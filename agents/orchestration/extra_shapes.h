// The extra input shapes a run checks every candidate at (docs/optimize.md "Extra shapes"):
// rule shapes derived from the kernel's blocks and the task's sizes (no LLM), the Tester's
// (with one), and the set a run keeps: the shapes the kernel as written passes.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "agents/subagents/shape_cases.h"

namespace mk::agents {

// What the rules read from a kernel's lowering (the worker's `lower` reply).
struct TaskSizes {
  std::vector<std::vector<int64_t>> input_shapes;  // the task's array inputs
  std::vector<int64_t> sizes;                      // every distinct input size, first seen first
  std::map<int64_t, std::set<int64_t>> blocks;     // a size -> the block sizes that split it
  static TaskSizes from_lowering(const nlohmann::json& lower_body);
};

struct RuleShapes {
  std::vector<ShapeCase> cases;
  std::string none;  // why there are none ("" when there are some)
};

// The rule shapes, kept small for interpret mode (every size below the task's own):
// - "ragged": every size the kernel splits into blocks becomes the smallest ODD multiple of its
//   granularity (size_granularity) above the largest such block: a whole number of the kernel's
//   blocks (a kernel whose blocks divide the granularity passes), but a partial last block for
//   every power-of-two block above the granularity, so a variant with larger blocks that drops
//   the remainder (grid = M // BLOCK_M) fails it. Still a multiple of the granularity: a kernel
//   for a task of 4096 rows may assume multiples of 128, never 256;
// - "single_block": every split size becomes its largest block, when that block is a multiple
//   of the size's granularity (a one-step grid along it);
// - the task's own shape (the largest) is every candidate's main check, not an extra shape.
RuleShapes rule_shapes(const TaskSizes& task);

// The set of a run, stored with it so a resumed run checks the same shapes.
struct ExtraShapes {
  std::vector<ShapeCase> cases;  // checked for every candidate
  // True once the cases are final: the kernel as written was checked at them (shapes it fails
  // are dropped, with a note: no variant is held to more than the kernel as written does), or
  // the root is the task's reference (the oracle passes every shape).
  bool settled = false;
  std::vector<std::string> notes;  // why there are none, the Tester's trouble, dropped shapes

  nlohmann::json to_json() const;
  static ExtraShapes from_json(const nlohmann::json& value);
  // The worker's `extra_shapes` request field.
  nlohmann::json worker_option(bool required) const;
  // Settles from the kernel as written's `extra_shapes` report (checked, not required): keeps
  // the shapes it passed, notes the ones it fails or that could not be checked.
  void settle(const nlohmann::json& report);
  // One line: "extra shapes: ragged (512 -> 384), single_block (512 -> 256)" or
  // "extra shapes: none (why)", and the notes.
  std::string summary() const;
};

// Adds `more` to `set` (names kept unique, identical size maps once), at most `max_cases` in all.
void add_shape_cases(std::vector<ShapeCase>& set, const std::vector<ShapeCase>& more,
                     size_t max_cases);

}  // namespace mk::agents
