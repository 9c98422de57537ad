#include "lsp/server/host_settings.h"

namespace mk::server {

std::optional<service::HostChoice> host_choice_of(const HostSettings& settings,
                                                  std::string& error) {
  service::HostChoice choice;
  if (!service::add_host_names(settings.default_host, choice.names, error)) return std::nullopt;
  for (const nlohmann::json& h : settings.hosts) choice.definitions.push_back(h.dump());
  choice.definitions_origin = "maxkernel.hosts";
  choice.local_python = settings.local_python;
  return choice;
}

}  // namespace mk::server
