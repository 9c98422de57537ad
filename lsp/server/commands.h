// The workspace/executeCommand commands the server offers on each kernel (code lenses).
#pragma once

#include <string>
#include <vector>

namespace mk::server {

struct KernelCommand {
  const char* id;     // "maxkernel.test"
  const char* title;  // "Test"
};

inline const std::vector<KernelCommand>& kernel_commands() {
  static const std::vector<KernelCommand> commands = {
      {"maxkernel.optimizeStepByStep", "Optimize step by step"},
      {"maxkernel.optimizeAuto", "Auto"},
      {"maxkernel.graphSearch", "Graph search"},
      {"maxkernel.test", "Test"},
      {"maxkernel.profile", "Profile"},
  };
  return commands;
}

// Commands the server answers that are not lenses on every kernel (job control, run results,
// writing a kernel for a reference).
inline const std::vector<const char*>& run_commands() {
  static const std::vector<const char*> commands = {"maxkernel.cancelJob", "maxkernel.openReport",
                                                    "maxkernel.applyBestVariant",
                                                    "maxkernel.writeKernel"};
  return commands;
}

}  // namespace mk::server
