#include "agents/orchestration/expander_factory.h"

#include <spdlog/spdlog.h>

#include "agents/orchestration/llm_expander.h"
#include "agents/orchestration/llm_proposer.h"
#include "agents/orchestration/rule_expander.h"
#include "agents/orchestration/run_lessons.h"

namespace mk::agents {

std::string describe_target(const knowledge::TpuGeneration& target) {
  std::string out = "TPU " + target.name + ":";
  if (target.vmem_bytes)
    out += " VMEM " + std::to_string(*target.vmem_bytes / (1024 * 1024)) + " MiB;";
  if (auto limit = target.scoped_vmem_limit())
    out += " default scoped VMEM limit " + std::to_string(*limit / (1024 * 1024)) + " MiB;";
  if (target.hbm_bandwidth_bytes_per_s)
    out += " HBM " + std::to_string(static_cast<int64_t>(*target.hbm_bandwidth_bytes_per_s / 1e9)) +
           " GB/s;";
  for (const auto& [dtype, flops] : target.peak_flops_per_s)
    out +=
        " peak " + dtype + " " + std::to_string(static_cast<int64_t>(flops / 1e12)) + " TFLOP/s;";
  if (target.mxu_rows > 0)
    out += " MXU " + std::to_string(target.mxu_rows) + "x" + std::to_string(target.mxu_cols) +
           " x" + std::to_string(target.mxu_count_per_core) + " per core;";
  out += " TensorCores per chip " + std::to_string(target.tensorcores_per_chip) + ".";
  return out;
}

std::unique_ptr<llm::Client> make_llm_client(const ExpanderSetup& setup) {
  if (setup.llm_spec.empty() || setup.llm_spec == "none") return nullptr;
  llm::ProviderConfig settings = setup.llm_settings;
  if (setup.budget.tokens > 0 || setup.budget.usd > 0)
    settings.budget = std::make_shared<llm::Budget>(
        setup.budget.tokens > 0 ? std::optional<int64_t>(setup.budget.tokens) : std::nullopt,
        setup.budget.usd > 0 ? std::optional<double>(setup.budget.usd) : std::nullopt);
  return llm::make_client_for_spec(setup.llm_spec, settings);
}

std::unique_ptr<Proposer> make_proposer(const ExpanderSetup& setup,
                                        const knowledge::TpuGeneration& target,
                                        const llm::CancelFlag& cancelled) {
  std::unique_ptr<llm::Client> client = make_llm_client(setup);
  if (!client) return std::make_unique<RuleProposer>();
  LlmProposerOptions options;
  options.task_summary = setup.task_summary;
  options.target_facts = describe_target(target);
  options.cancelled = cancelled;
  return std::make_unique<LlmProposer>(std::move(client), std::move(options));
}

ExpanderBundle make_expander(const ExpanderSetup& setup, const knowledge::TpuGeneration& target) {
  ExpanderBundle bundle;
  if (setup.llm_spec.empty() || setup.llm_spec == "none") {
    bundle.expander = std::make_unique<RuleExpander>();
    return bundle;
  }
  bundle.client = make_llm_client(setup);

  LlmExpanderOptions options;
  options.task_summary = setup.task_summary;
  options.task = setup.task;
  options.target_facts = describe_target(target);
  if (setup.store) {
    knowledge::Store* store = setup.store;
    const std::string kernel_class = setup.kernel_class, target_name = target.name;
    options.retrieve = [store, kernel_class, target_name](const std::string& source,
                                                          const std::string& error) {
      std::vector<std::string> out = lesson_passages(*store, kernel_class, target_name, 3);
      // The kernel's head is enough to find the right passages; the error matters most.
      for (const auto& p : store->retrieve_for(source.substr(0, 2000), error, 1500))
        out.push_back(p.title + ":\n" + p.text);
      return out;
    };
    options.record_fix = [store, kernel_class, target_name](const std::string& failure,
                                                            const std::string& fix) {
      try {
        record_debug_lesson(*store, kernel_class, target_name, failure, fix);
      } catch (const std::exception& e) {
        spdlog::warn("could not keep the debugger's fix as a lesson: {}", e.what());
      }
    };
  }
  if (setup.evaluator) {
    CandidateEvaluator* evaluator = setup.evaluator;
    options.candidate_error = [evaluator](const std::string& source,
                                          const std::function<bool()>& cancelled) {
      return evaluator->debug_error(source, cancelled);
    };
  }
  bundle.expander = std::make_unique<LlmExpander>(*bundle.client, std::move(options));
  return bundle;
}

}  // namespace mk::agents
