// The editor's host settings (maxkernel.host, maxkernel.hosts, maxkernel.python, on-save
// lowering) and the service's host choice they make: what Test/Profile, on-save lowering, the
// kernel writer, step-by-step sessions and Auto / graph runs ask the workspace's hosts with.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "service/hosts.h"

namespace mk::server {

struct HostSettings {
  std::string default_host = "local";  // one name, or several joined by commas (a pool)
  std::string local_python;            // empty: MAXKERNEL_PYTHON, the repo .venv, or python3
  nlohmann::json hosts = nlohmann::json::array();  // host objects, see docs/hosts.md
  bool lower_on_save = true;
  std::string target = "v5e";  // the generation on-save lowering is compiled for (no TPU attached)
};

// The settings' host list and definitions as the service layer takes them; nullopt and `error`
// for an empty name in the list ("a,,b").
std::optional<service::HostChoice> host_choice_of(const HostSettings& settings, std::string& error);

}  // namespace mk::server
