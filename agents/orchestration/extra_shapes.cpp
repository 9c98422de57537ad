#include "agents/orchestration/extra_shapes.h"

#include <algorithm>

namespace mk::agents {

using nlohmann::json;

namespace {

std::vector<int64_t> int_list(const json& value) {
  std::vector<int64_t> out;
  if (!value.is_array()) return out;
  for (const json& v : value) out.push_back(v.is_number_integer() ? v.get<int64_t>() : -1);
  return out;
}

// The smallest odd multiple of g above `above`, below `limit` (the task's own size); 0 when none.
// An odd multiple of g is a whole number of blocks for no power-of-two block larger than g.
int64_t ragged_size(int64_t g, int64_t above, int64_t limit) {
  int64_t r = (above / g + 1) * g;
  if ((r / g) % 2 == 0) r += g;
  return r < limit ? r : 0;
}

}  // namespace

TaskSizes TaskSizes::from_lowering(const json& body) {
  TaskSizes out;
  for (const json& input : body.value("inputs", json::array())) {
    if (!input.is_object() || !input.contains("shape")) continue;
    const std::vector<int64_t> shape = int_list(input["shape"]);
    out.input_shapes.push_back(shape);
    for (int64_t d : shape)
      if (d > 0 && std::find(out.sizes.begin(), out.sizes.end(), d) == out.sizes.end())
        out.sizes.push_back(d);
  }
  for (const json& call : body.value("pallas_calls", json::array())) {
    for (const json& operand : call.value("operands", json::array())) {
      const std::vector<int64_t> shape = int_list(operand.value("array_shape", json()));
      const json block = operand.value("block_shape", json());
      if (!block.is_array() || block.size() != shape.size()) continue;
      for (size_t i = 0; i < shape.size(); ++i) {
        // An int block smaller than its dim splits it; a squeezed (null) or element dim does not.
        if (!block[i].is_number_integer()) continue;
        const int64_t b = block[i].get<int64_t>();
        if (b > 0 && b < shape[i] &&
            std::find(out.sizes.begin(), out.sizes.end(), shape[i]) != out.sizes.end())
          out.blocks[shape[i]].insert(b);
      }
    }
  }
  return out;
}

RuleShapes rule_shapes(const TaskSizes& task) {
  RuleShapes out;
  if (task.blocks.empty()) {
    out.none = "the kernel splits none of the task's input sizes into blocks";
    return out;
  }
  ShapeCase ragged{"ragged", {}, ""}, single{"single_block", {}, ""};
  std::string ragged_why, single_why;
  for (const auto& [size, blocks] : task.blocks) {
    const int64_t g = size_granularity(size);
    const int64_t largest = *blocks.rbegin();
    if (const int64_t r = ragged_size(g, largest, size)) {
      ragged.sizes[size] = r;
      ragged_why += (ragged_why.empty() ? "" : "; ") + std::to_string(size) + " -> " +
                    std::to_string(r) + " (" + std::to_string(r / g) + " x " + std::to_string(g) +
                    "): a partial last block for any block of " + std::to_string(2 * g) +
                    " or more a power of two";
    }
    if (largest % g == 0) {
      single.sizes[size] = largest;
      single_why += (single_why.empty() ? "" : "; ") + std::to_string(size) + " -> " +
                    std::to_string(largest) + ": one block";
    }
  }
  ragged.why = ragged_why;
  single.why = single_why;
  if (!ragged.sizes.empty()) out.cases.push_back(ragged);
  if (!single.sizes.empty() && single.sizes != ragged.sizes) out.cases.push_back(single);
  if (out.cases.empty())
    out.none = "every split size is too small for a ragged shape above its blocks";
  return out;
}

json ExtraShapes::to_json() const {
  json list = json::array();
  for (const ShapeCase& c : cases) list.push_back(c.to_json());
  return {{"cases", list}, {"settled", settled}, {"notes", notes}};
}

ExtraShapes ExtraShapes::from_json(const json& value) {
  ExtraShapes out;
  if (!value.is_object()) return out;
  for (const json& c : value.value("cases", json::array())) {
    try {
      out.cases.push_back(ShapeCase::from_json(c));
    } catch (const std::exception&) {
      // A hand-edited store: a malformed shape is skipped, never guessed at.
    }
  }
  out.settled = value.value("settled", false);
  for (const json& n : value.value("notes", json::array()))
    if (n.is_string()) out.notes.push_back(n.get<std::string>());
  return out;
}

json ExtraShapes::worker_option(bool required) const {
  json list = json::array();
  for (const ShapeCase& c : cases) list.push_back(c.to_json());
  return {{"cases", list}, {"required", required}};
}

void ExtraShapes::settle(const json& report) {
  std::vector<ShapeCase> kept;
  const json results = report.is_object() ? report.value("cases", json::array()) : json::array();
  for (const ShapeCase& c : cases) {
    const auto it = std::find_if(results.begin(), results.end(), [&](const json& r) {
      return r.is_object() && r.value("name", std::string()) == c.name;
    });
    const std::string status = it == results.end() ? "" : it->value("status", std::string());
    if (status == "passed") {
      kept.push_back(c);
    } else if (status == "failed") {
      notes.push_back("the kernel as written fails extra shape `" + c.name + "` (" +
                      describe_sizes(c.sizes) + "): " + it->value("message", std::string()) +
                      "; its variants are not held to it");
    } else if (status == "not_checked") {
      notes.push_back("extra shape `" + c.name + "` (" + describe_sizes(c.sizes) +
                      ") cannot be checked: " + it->value("why", std::string()));
    } else {
      notes.push_back("extra shape `" + c.name + "` was not checked for the kernel as written");
    }
  }
  cases = std::move(kept);
  settled = true;
}

std::string ExtraShapes::summary() const {
  std::string out = "extra shapes: ";
  if (cases.empty()) {
    out += "none";
  } else {
    for (size_t i = 0; i < cases.size(); ++i)
      out += (i ? ", " : "") + cases[i].name + " (" + describe_sizes(cases[i].sizes) + ")";
  }
  for (const std::string& n : notes) out += "\n  " + n;
  return out;
}

void add_shape_cases(std::vector<ShapeCase>& set, const std::vector<ShapeCase>& more,
                     size_t max_cases) {
  for (const ShapeCase& c : more) {
    if (set.size() >= max_cases) return;
    if (std::any_of(set.begin(), set.end(), [&](const ShapeCase& s) { return s.sizes == c.sizes; }))
      continue;
    ShapeCase added = c;
    for (int n = 2; std::any_of(set.begin(), set.end(),
                                [&](const ShapeCase& s) { return s.name == added.name; });
         ++n)
      added.name = c.name + "_" + std::to_string(n);
    set.push_back(added);
  }
}

}  // namespace mk::agents
