// The profile analyst's part of an LLM expansion: what it is told about the parent (the node's
// numbers, its rule diagnosis and a device profile where there is one, in words), its answer as
// the parent records it (metrics "analysis": a resumed run or a second expansion of the same
// parent reuses it instead of asking again), and the diagnosis section the Planner gets, which
// always carries the rule diagnosis and adds the analyst's answer when there is one.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/orchestration/diagnosis.h"
#include "agents/subagents/answer_parsers.h"

namespace mk::agents {

struct ParentAnalysis {
  std::optional<Analysis> analysis;  // the analyst's answer; empty when it gave none
  std::string error;                 // why there is no answer ("" when there is one)
  int prompt_version = 0;            // of profile_analyst.md

  nlohmann::json to_json() const;
  // nullopt when `j` is not such a record (nothing recorded yet).
  static std::optional<ParentAnalysis> from_json(const nlohmann::json& j);
};

// The node's numbers in words: how it was scored, each pallas_call's grid, blocks, VMEM and HBM
// traffic, the time model's split, the task's minimum work. Missing facts are left out.
std::string measurements_text(const nlohmann::json& metrics);

// The device profile in the metrics (`profile.summary`) in words, or "" when there is none.
std::string device_profile_text(const nlohmann::json& metrics);

// The rule diagnosis in words: its summary line, then the numbers it rests on.
std::string diagnosis_text(const Diagnosis& d);

// The Planner's diagnosis section: the rule diagnosis, then the analyst's answer or why there is
// none.
std::string planner_diagnosis_text(const Diagnosis& d, const ParentAnalysis& analysis);

// What an LLM child records as the diagnosis it answers ("<summary>; profile analyst:
// <bottleneck> -> <description>"): the same field the rule expander fills with answer_text.
std::string llm_answer_text(const Diagnosis& d, const ParentAnalysis& analysis,
                            const std::string& proposal_description);

}  // namespace mk::agents
