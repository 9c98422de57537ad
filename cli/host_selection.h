// Choosing a kernel host from the command line: --host NAME (default "local"), hosts defined in a
// JSON file (--hosts FILE or $MAXKERNEL_HOSTS_FILE), --python for the local interpreter.
#pragma once

#include <optional>
#include <string>

#include "tpu/host/host_config.h"

namespace mk::cli {

// The python that has JAX for the local host: --python, else $MAXKERNEL_PYTHON, else the
// repository's .venv next to the binary, else python3.
std::string default_local_python();

std::optional<tpu::HostConfig> select_host(const std::string& name, const std::string& hosts_file,
                                           const std::string& python, std::string& error);

}  // namespace mk::cli
