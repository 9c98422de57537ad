// Choosing kernel hosts from the command line: --host NAME (default "local"; several with
// --host a,b or a repeated --host), hosts defined in a JSON file (--hosts FILE or
// $MAXKERNEL_HOSTS_FILE), --python for the local interpreter.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tpu/host/host_config.h"

namespace mk::cli {

std::optional<tpu::HostConfig> select_host(const std::string& name, const std::string& hosts_file,
                                           const std::string& python, std::string& error);

// Adds the names of one --host value ("a" or "a,b"; spaces around names ignored) to `names`,
// skipping repeats. False with `error` for an empty name ("a,,b", ",").
bool add_host_names(const std::string& value, std::vector<std::string>& names, std::string& error);

}  // namespace mk::cli
