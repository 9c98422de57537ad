#include "agents/subagents/shape_cases.h"

#include <algorithm>
#include <stdexcept>

namespace mk::agents {

using nlohmann::json;

json ShapeCase::to_json() const {
  json map = json::object();
  for (const auto& [from, to] : sizes) map[std::to_string(from)] = to;
  json out = {{"name", name}, {"sizes", map}};
  if (!why.empty()) out["why"] = why;
  return out;
}

ShapeCase ShapeCase::from_json(const json& value) {
  if (!value.is_object() || !value.contains("name") || !value["name"].is_string() ||
      !value.contains("sizes") || !value["sizes"].is_object())
    throw std::invalid_argument("an extra shape is {\"name\": ..., \"sizes\": {\"SIZE\": NEW}}");
  ShapeCase out;
  out.name = value["name"].get<std::string>();
  out.why = value.value("why", std::string());
  for (const auto& [key, to] : value["sizes"].items()) {
    if (!to.is_number_integer()) throw std::invalid_argument("extra shape sizes must be integers");
    out.sizes[std::stoll(key)] = to.get<int64_t>();
  }
  return out;
}

int64_t size_granularity(int64_t size) {
  if (size <= 0) return 1;
  return std::min<int64_t>(size & -size, 128);
}

std::string shape_case_error(const ShapeCase& shape, const std::vector<int64_t>& task_sizes) {
  if (shape.sizes.empty()) return "it maps no size";
  bool changes = false;
  for (const auto& [from, to] : shape.sizes) {
    const std::string which = std::to_string(from) + " -> " + std::to_string(to);
    if (std::find(task_sizes.begin(), task_sizes.end(), from) == task_sizes.end())
      return which + ": " + std::to_string(from) + " is not a size of the task's inputs";
    if (to < 1) return which + ": sizes are positive";
    if (to > from) return which + ": larger than the task's own size (the largest checked)";
    const int64_t g = size_granularity(from);
    if (to % g != 0)
      return which + ": not a multiple of " + std::to_string(g) + ", the granularity of " +
             std::to_string(from) + " a kernel may rely on";
    changes = changes || to != from;
  }
  if (!changes) return "it is the task's own shape";
  return "";
}

std::string describe_sizes(const std::map<int64_t, int64_t>& sizes) {
  std::string out;
  for (const auto& [from, to] : sizes) {
    if (!out.empty()) out += ", ";
    out += std::to_string(from) + " -> " + std::to_string(to);
  }
  return out;
}

}  // namespace mk::agents
