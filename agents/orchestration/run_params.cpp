#include "agents/orchestration/run_params.h"

#include "tpu/host/json_fields.h"

namespace mk::agents {

using nlohmann::json;
using tpu::number_at;
using tpu::object_at;
using tpu::text_at;

json RunParams::to_json() const {
  json j = {{"search", search.to_json()},
            {"state",
             {{"round", state.round},
              {"rounds_without_gain", state.rounds_without_gain},
              {"elapsed_s", state.elapsed_s}}}};
  if (state.tuned_round >= 0) j["state"]["tuned_round"] = state.tuned_round;
  if (from_reference) j["start"] = "reference";
  if (evaluate.is_object() && !evaluate.empty()) j["evaluate"] = evaluate;
  if (xla) {
    json x = {{"time_kind", xla->time_kind}};
    if (xla->score_s) x["score_s"] = *xla->score_s;
    if (xla->roofline_s) x["roofline_s"] = *xla->roofline_s;
    if (!xla->error.empty()) x["error"] = xla->error;
    j["xla"] = x;
  }
  if (extra_shapes) {
    json e = {{"rules", extra_shapes->rules}, {"tester", extra_shapes->tester}};
    if (!extra_shapes->set.is_null()) e["set"] = extra_shapes->set;
    j["extra_shapes"] = e;
  }
  if (!kernel_written.empty()) {
    j["kernel_written"] = {{"path", kernel_written}};
    if (kernel_written_node) j["kernel_written"]["node"] = *kernel_written_node;
  }
  return j;
}

RunParams RunParams::from_json(const json& j) {
  RunParams p;
  if (!j.is_object()) return p;
  p.search = SearchParams::from_json(object_at(j, "search"));
  p.from_reference = text_at(j, "start") == "reference";
  p.evaluate = object_at(j, "evaluate");
  const json state = object_at(j, "state");
  p.state.round = static_cast<int>(number_at(state, "round").value_or(0));
  p.state.rounds_without_gain =
      static_cast<int>(number_at(state, "rounds_without_gain").value_or(0));
  p.state.elapsed_s = number_at(state, "elapsed_s").value_or(0);
  p.state.tuned_round = static_cast<int>(number_at(state, "tuned_round").value_or(-1));
  if (const auto it = j.find("xla"); it != j.end() && it->is_object()) {
    XlaBaseline x;
    x.time_kind = text_at(*it, "time_kind");
    x.score_s = number_at(*it, "score_s");
    x.roofline_s = number_at(*it, "roofline_s");
    x.error = text_at(*it, "error");
    p.xla = x;
  }
  if (const auto it = j.find("extra_shapes"); it != j.end() && it->is_object()) {
    ExtraShapesChoice e;
    if (const auto rules = it->find("rules"); rules != it->end() && rules->is_boolean())
      e.rules = rules->get<bool>();
    e.tester = static_cast<int>(number_at(*it, "tester").value_or(0));
    if (const auto set = it->find("set"); set != it->end() && set->is_object()) e.set = *set;
    p.extra_shapes = e;
  }
  const json written = object_at(j, "kernel_written");
  p.kernel_written = text_at(written, "path");
  if (const auto node = number_at(written, "node"))
    p.kernel_written_node = static_cast<int64_t>(*node);
  return p;
}

}  // namespace mk::agents
