// `maxkernel lower | test | profile FILE[::KERNEL]`: run a kernel on a host through the worker.
#pragma once

#include <string>
#include <vector>

namespace mk::cli {

int run_kernel_command(const std::string& command, const std::vector<std::string>& args);

}  // namespace mk::cli
