#include "agents/subagents/answer_parsers.h"

#include <algorithm>

#include "agents/tuning/python_source.h"

namespace mk::agents {

namespace {

struct Fence {
  std::string tag;
  std::string body;
};

// Every ``` fenced block, with its language tag (lower-cased, may be empty).
std::vector<Fence> fences(const std::string& answer) {
  std::vector<Fence> out;
  size_t at = 0;
  for (;;) {
    const size_t open = answer.find("```", at);
    if (open == std::string::npos) break;
    const size_t tag_end = answer.find('\n', open);
    if (tag_end == std::string::npos) break;
    std::string tag = answer.substr(open + 3, tag_end - open - 3);
    tag.erase(std::remove_if(tag.begin(), tag.end(),
                             [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
              tag.end());
    std::transform(tag.begin(), tag.end(), tag.begin(), [](char c) {
      return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    // The closing fence normally starts a line; models sometimes glue it to the last line.
    const size_t close = answer.find("```", tag_end);
    if (close == std::string::npos) {
      throw AnswerFormatError("a ``` fence opened at byte " + std::to_string(open) +
                              " is never closed");
    }
    out.push_back({tag, answer.substr(tag_end + 1, close - (tag_end + 1))});
    const size_t after = answer.find('\n', close + 3);
    at = after == std::string::npos ? answer.size() : after;
  }
  return out;
}

std::string required_string(const nlohmann::json& object, const char* key, const char* where) {
  if (!object.contains(key) || !object[key].is_string() || object[key].get<std::string>().empty()) {
    throw AnswerFormatError(std::string(where) + ": `" + key + "` must be a non-empty string");
  }
  return object[key].get<std::string>();
}

std::vector<Strategy> strategies_from(const nlohmann::json& list, const char* key,
                                      size_t max_strategies) {
  if (!list.is_array() || list.empty()) {
    throw AnswerFormatError(std::string("`") + key + "` must be a non-empty list of strategies");
  }
  if (list.size() > max_strategies) {
    throw AnswerFormatError(std::string("`") + key + "` has " + std::to_string(list.size()) +
                            " strategies; at most " + std::to_string(max_strategies) + " allowed");
  }
  std::vector<Strategy> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) throw AnswerFormatError(where + " must be an object");
    out.push_back({required_string(list[i], "name", where.c_str()),
                   required_string(list[i], "why", where.c_str()),
                   required_string(list[i], "expected_effect", where.c_str())});
  }
  return out;
}

int64_t positive_int(const nlohmann::json& v, int64_t max, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > max) {
    throw AnswerFormatError(where + " must be an integer from 1 to " + std::to_string(max) +
                            ", got " + v.dump());
  }
  return v.get<int64_t>();
}

}  // namespace

std::string parse_python_file_answer(const std::string& answer) {
  const std::vector<Fence> all = fences(answer);
  if (all.empty()) {
    throw AnswerFormatError(
        "no ```python fenced code block found; answer with the whole file "
        "in one ```python block");
  }
  const Fence* best = nullptr;
  std::string other_tags;
  for (const Fence& f : all) {
    if (f.tag == "python" || f.tag == "py" || f.tag == "python3" || f.tag.empty()) {
      if (!best || f.body.size() > best->body.size()) best = &f;
    } else {
      other_tags += (other_tags.empty() ? "" : ", ") + f.tag;
    }
  }
  if (!best) {
    throw AnswerFormatError("the code block is tagged `" + other_tags +
                            "`, not `python`; answer with the whole file in one ```python block");
  }
  const ParseCheck parsed = check_python_syntax(best->body);
  if (!parsed.ok) throw AnswerFormatError("the Python does not parse: " + parsed.error);
  if (!mentions_pallas_call(best->body)) {
    throw AnswerFormatError("the file has no pallas_call; the kernel must stay a Pallas kernel");
  }
  return best->body;
}

nlohmann::json parse_json_answer(const std::string& answer) {
  std::string text;
  const std::vector<Fence> all = fences(answer);
  for (const Fence& f : all) {
    if (f.tag == "json" || f.tag.empty()) {
      text = f.body;
      break;
    }
  }
  if (text.empty()) {
    if (!all.empty()) {
      throw AnswerFormatError("the fenced block is tagged `" + all.front().tag +
                              "`, not `json`; answer with one ```json block");
    }
    text = answer;  // a bare JSON object
  }
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) {
    // Say where: nlohmann's exception carries the byte position.
    try {
      value = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw AnswerFormatError(std::string("the JSON does not parse: ") + e.what());
    }
    throw AnswerFormatError("the JSON does not parse");
  }
  if (!value.is_object()) throw AnswerFormatError("the answer must be one JSON object");
  return value;
}

std::vector<Strategy> parse_plan_answer(const std::string& answer, size_t max_strategies) {
  const nlohmann::json value = parse_json_answer(answer);
  if (!value.contains("strategies")) throw AnswerFormatError("the object has no `strategies` list");
  return strategies_from(value["strategies"], "strategies", max_strategies);
}

std::vector<ShapeCase> parse_shape_cases_answer(const std::string& answer,
                                                const std::vector<int64_t>& task_sizes,
                                                size_t max_cases) {
  const nlohmann::json value = parse_json_answer(answer);
  if (!value.contains("cases") || !value["cases"].is_array() || value["cases"].empty()) {
    throw AnswerFormatError("`cases` must be a non-empty list of {\"sizes\": {...}, \"why\": ...}");
  }
  const auto& list = value["cases"];
  if (list.size() > max_cases) {
    throw AnswerFormatError("`cases` has " + std::to_string(list.size()) + " cases; at most " +
                            std::to_string(max_cases) + " allowed");
  }
  std::vector<ShapeCase> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "cases[" + std::to_string(i) + "]";
    if (!list[i].is_object() || !list[i].contains("sizes") || !list[i]["sizes"].is_object()) {
      throw AnswerFormatError(where +
                              " must be {\"sizes\": {\"SIZE\": NEW_SIZE, ...}, \"why\": ...}");
    }
    ShapeCase shape;
    shape.name = "tester_" + std::to_string(i + 1);
    if (list[i].contains("why") && list[i]["why"].is_string())
      shape.why = list[i]["why"].get<std::string>().substr(0, 200);
    for (const auto& [key, to] : list[i]["sizes"].items()) {
      int64_t from = 0;
      try {
        size_t used = 0;
        from = std::stoll(key, &used);
        if (used != key.size()) from = 0;
      } catch (const std::exception&) {
        from = 0;
      }
      if (from < 1) throw AnswerFormatError(where + ".sizes: `" + key + "` is not a size");
      shape.sizes[from] = positive_int(to, int64_t{1} << 24, where + ".sizes." + key);
    }
    if (const std::string why = shape_case_error(shape, task_sizes); !why.empty())
      throw AnswerFormatError(where + ": " + why);
    out.push_back(std::move(shape));
  }
  return out;
}

std::map<std::string, std::vector<int64_t>> parse_extra_values_answer(
    const std::string& answer, const std::vector<std::string>& known, size_t max_values) {
  const nlohmann::json value = parse_json_answer(answer);
  if (!value.contains("extra_values") || !value["extra_values"].is_object()) {
    throw AnswerFormatError("`extra_values` must be an object {\"PARAM\": [values]}");
  }
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, values] : value["extra_values"].items()) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw AnswerFormatError("`" + name + "` is not a parameter of the search space");
    }
    if (!values.is_array() || values.size() > max_values) {
      throw AnswerFormatError("`extra_values." + name + "` must be a list of at most " +
                              std::to_string(max_values) + " values");
    }
    for (size_t i = 0; i < values.size(); ++i) {
      out[name].push_back(positive_int(values[i], int64_t{1} << 24,
                                       "extra_values." + name + "[" + std::to_string(i) + "]"));
    }
  }
  return out;
}

Analysis parse_analysis_answer(const std::string& answer, size_t max_strategies) {
  const nlohmann::json value = parse_json_answer(answer);
  Analysis a;
  a.bottleneck = required_string(value, "bottleneck", "the analysis");
  if (value.contains("evidence") && value["evidence"].is_string()) {
    a.evidence = value["evidence"].get<std::string>();
  }
  if (!value.contains("next_strategies")) {
    throw AnswerFormatError("the object has no `next_strategies` list");
  }
  a.next_strategies = strategies_from(value["next_strategies"], "next_strategies", max_strategies);
  return a;
}

}  // namespace mk::agents
