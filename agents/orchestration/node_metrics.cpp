#include "agents/orchestration/node_metrics.h"

#include "tpu/host/json_fields.h"

namespace mk::agents {

using nlohmann::json;
using tpu::number_at;
using tpu::text_at;

namespace {

// The member `key` of `j` (nullptr when `j` is no object or lacks it).
json* member(json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// Removes `key` from `j` and returns it when `says_something` accepts its value; otherwise the
// value stays where it is (a null or an empty text is written back as it came).
template <typename T, typename Accept>
std::optional<T> take(json& j, const char* key, Accept says_something) {
  json* value = member(j, key);
  if (!value || !says_something(*value)) return std::nullopt;
  T out = value->get<T>();
  j.erase(key);
  return out;
}

std::optional<double> take_number(json& j, const char* key) {
  return take<double>(j, key, [](const json& v) { return v.is_number(); });
}

std::optional<int64_t> take_integer(json& j, const char* key) {
  return take<int64_t>(j, key, [](const json& v) { return v.is_number_integer(); });
}

std::optional<bool> take_bool(json& j, const char* key) {
  return take<bool>(j, key, [](const json& v) { return v.is_boolean(); });
}

std::string take_text(json& j, const char* key) {
  return take<std::string>(j, key, [](const json& v) { return v.is_string() && !v.empty(); })
      .value_or("");
}

// `j[key]` as an object, replacing whatever else was there.
json& object_member(json& j, const char* key) {
  json& value = j[key];
  if (!value.is_object()) value = json::object();
  return value;
}

void put(json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}

void put(json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

TimedSide take_side(json& side) {
  TimedSide t;
  t.median_s = take_number(side, "median_s");
  t.p10_s = take_number(side, "p10_s");
  t.p90_s = take_number(side, "p90_s");
  t.runs = take_integer(side, "runs");
  if (json* device = member(side, "device"); device && device->is_object())
    t.device_median_s = take_number(*device, "median_s");
  return t;
}

void put_side(json& side, const TimedSide& t) {
  put(side, "median_s", t.median_s);
  put(side, "p10_s", t.p10_s);
  put(side, "p90_s", t.p90_s);
  if (t.runs) side["runs"] = *t.runs;
  if (t.device_median_s) object_member(side, "device")["median_s"] = *t.device_median_s;
}

CallPrediction prediction_from_json(const json& p) {
  CallPrediction c;
  if (!p.is_object()) return c;
  c.kernel = text_at(p, "kernel");
  c.unavailable = text_at(p, "unavailable");
  c.label = text_at(p, "label");
  c.predicted_s = number_at(p, "predicted_s");
  c.compute_s = number_at(p, "compute_s");
  c.memory_s = number_at(p, "memory_s");
  c.overhead_s = number_at(p, "overhead_s");
  c.bound = text_at(p, "bound");
  c.arithmetic_intensity = number_at(p, "arithmetic_intensity");
  c.ridge_intensity = number_at(p, "ridge_intensity");
  if (const auto it = p.find("assumptions"); it != p.end() && it->is_array())
    for (const json& a : *it)
      if (a.is_string()) c.assumptions.push_back(a.get<std::string>());
  return c;
}

json prediction_to_json(const CallPrediction& c) {
  json p = {{"kernel", c.kernel}};
  put(p, "unavailable", c.unavailable);
  put(p, "label", c.label);
  put(p, "predicted_s", c.predicted_s);
  put(p, "compute_s", c.compute_s);
  put(p, "memory_s", c.memory_s);
  put(p, "overhead_s", c.overhead_s);
  put(p, "bound", c.bound);
  put(p, "arithmetic_intensity", c.arithmetic_intensity);
  put(p, "ridge_intensity", c.ridge_intensity);
  // A prediction lists its assumptions even when there are none, as predict_pallas_calls does.
  if (!c.assumptions.empty() || c.predicted_s) p["assumptions"] = c.assumptions;
  return p;
}

}  // namespace

std::optional<double> NodeMetrics::roofline_fraction() const {
  return bottleneck ? bottleneck->roofline_fraction : std::nullopt;
}

NodeMetrics NodeMetrics::from_json(json j) {
  NodeMetrics m;
  if (!j.is_object()) return m;
  m.correct = take_bool(j, "correct");
  m.time_kind = take_text(j, "time_kind");
  if (json* timing = member(j, "timing"); timing && timing->is_object()) {
    if (json* side = member(*timing, "candidate"); side && side->is_object())
      m.candidate_time = take_side(*side);
    if (json* side = member(*timing, "reference"); side && side->is_object())
      m.reference_time = take_side(*side);
  }
  m.speedup_vs_reference = take_number(j, "speedup_vs_reference");
  if (json* predictions = member(j, "predictions");
      predictions && predictions->is_array() && !predictions->empty()) {
    for (const json& p : *predictions) m.predictions.push_back(prediction_from_json(p));
    j.erase("predictions");
  }
  m.host = take_text(j, "host");
  m.stage = take_text(j, "stage");
  m.answers = take_text(j, "answers");
  if (json* analysis = member(j, "analysis"); analysis && analysis->is_object()) {
    m.analysis = std::move(*analysis);
    j.erase("analysis");
  }
  if (json* bottleneck = member(j, "bottleneck"); bottleneck && bottleneck->is_object()) {
    m.bottleneck = Diagnosis::from_json(*bottleneck);
    j.erase("bottleneck");
    j.erase("roofline_fraction");  // the diagnosis' own, written beside it
  }
  m.facts = std::move(j);
  return m;
}

json NodeMetrics::to_json() const {
  json j = facts.is_object() ? facts : json::object();
  if (correct) j["correct"] = *correct;
  put(j, "time_kind", time_kind);
  if (candidate_time)
    put_side(object_member(object_member(j, "timing"), "candidate"), *candidate_time);
  if (reference_time)
    put_side(object_member(object_member(j, "timing"), "reference"), *reference_time);
  put(j, "speedup_vs_reference", speedup_vs_reference);
  if (!predictions.empty()) {
    json list = json::array();
    for (const CallPrediction& p : predictions) list.push_back(prediction_to_json(p));
    j["predictions"] = std::move(list);
  }
  put(j, "host", host);
  put(j, "stage", stage);
  put(j, "answers", answers);
  if (analysis.is_object()) j["analysis"] = analysis;
  if (bottleneck) {
    j["bottleneck"] = bottleneck->to_json();
    j["roofline_fraction"] =
        bottleneck->roofline_fraction ? json(*bottleneck->roofline_fraction) : json();
  }
  return j;
}

bool NodeMetrics::operator==(const NodeMetrics& other) const {
  return to_json() == other.to_json();
}

}  // namespace mk::agents
