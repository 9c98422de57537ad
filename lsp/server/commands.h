// The workspace/executeCommand commands the server offers on each kernel (code lenses).
#pragma once

#include <string>
#include <vector>

namespace mk::server {

struct KernelCommand {
  const char* id;       // "maxkernel.test"
  const char* title;    // "Test"
  const char* arrives;  // which part of the product makes it work
};

inline const std::vector<KernelCommand>& kernel_commands() {
  static const std::vector<KernelCommand> commands = {
      {"maxkernel.optimizeStepByStep", "Optimize step by step", "the HITL session (agents)"},
      {"maxkernel.optimizeAuto", "Auto", "the Auto loop (agents)"},
      {"maxkernel.graphSearch", "Graph search", "graph search (agents)"},
      {"maxkernel.test", "Test", "kernel hosts (the worker)"},
      {"maxkernel.profile", "Profile", "kernel hosts (the worker)"},
  };
  return commands;
}

// Commands the server answers that are not lenses on every kernel (job control, run results).
inline const std::vector<const char*>& run_commands() {
  static const std::vector<const char*> commands = {"maxkernel.cancelJob", "maxkernel.openReport",
                                                    "maxkernel.applyBestVariant"};
  return commands;
}

}  // namespace mk::server
