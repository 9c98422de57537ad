// An extra input shape a run checks every candidate at (docs/optimize.md "Extra shapes"): a
// by-value map of the task's input sizes to other sizes. Only sizes: the inputs, the reference
// and the tolerances always come from the task (the worker realises a shape by running the
// task's own inputs function and reference at it).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mk::agents {

struct ShapeCase {
  std::string name;                  // "ragged", "single_block", "tester_1", ...
  std::map<int64_t, int64_t> sizes;  // a task size -> its size in this shape
  std::string why;                   // one line: what the shape exercises

  // The worker's form: {"name", "sizes": {"512": 384}, "why"}.
  nlohmann::json to_json() const;
  // Throws std::invalid_argument on a malformed object.
  static ShapeCase from_json(const nlohmann::json& value);
  bool operator==(const ShapeCase&) const = default;
};

// The granularity a task's size promises a kernel: the largest power of two dividing it, at
// most 128 (the TPU lane width). A kernel may assume every size of the task is a multiple of
// its size's granularity (a task of 4096 rows lets it assume multiples of 128, one of 72 rows
// only multiples of 8), so an extra shape keeps every size a multiple of it.
int64_t size_granularity(int64_t size);

// Why `shape` is not a fair extra shape of a task with these input sizes ("" when it is): every
// key is a size of the task, every new size positive, no larger than the task's own (the task's
// shape is the largest checked) and a multiple of the key's granularity, and one size changes.
std::string shape_case_error(const ShapeCase& shape, const std::vector<int64_t>& task_sizes);

// "512 -> 384, 128 -> 128": the map in words.
std::string describe_sizes(const std::map<int64_t, int64_t>& sizes);

}  // namespace mk::agents
