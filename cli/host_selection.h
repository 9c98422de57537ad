// Choosing a kernel host from the command line: --host NAME (default "local"), hosts defined in a
// JSON file (--hosts FILE or $MAXKERNEL_HOSTS_FILE), --python for the local interpreter.
#pragma once

#include <optional>
#include <string>

#include "tpu/host/host_config.h"

namespace mk::cli {

std::optional<tpu::HostConfig> select_host(const std::string& name, const std::string& hosts_file,
                                           const std::string& python, std::string& error);

}  // namespace mk::cli
