// `command`: a machine reached by a command template (a `gcloud ... ssh` line, a container exec):
// the argument containing {command} gets the remote command. The bundle is installed through it.
#include "tpu/host/host_config.h"
#include "tpu/host/host_kind.h"

namespace mk::tpu {

namespace {
class CommandHostKind : public HostKind {
 public:
  std::string_view name() const override { return "command"; }

  void read_settings(const nlohmann::json& j, HostConfig& host) const override {
    host.command_template = j.value("command", std::vector<std::string>{});
  }

  std::string check_settings(const HostConfig& host) const override {
    for (const std::string& part : host.command_template)
      if (part.find("{command}") != std::string::npos) return "";
    return "the command template needs an argument containing {command}";
  }

  bool has_remote_shell() const override { return true; }

  std::vector<std::string> remote_shell(const HostConfig& host,
                                        const std::string& command) const override {
    std::vector<std::string> argv;
    for (const std::string& part : host.command_template) {
      std::string arg = part;
      const size_t at = arg.find("{command}");
      if (at != std::string::npos) arg.replace(at, 9, command);
      argv.push_back(arg);
    }
    return argv;
  }
};
}  // namespace

const HostKind& command_host_kind() {
  static const CommandHostKind kind;
  return kind;
}

}  // namespace mk::tpu
