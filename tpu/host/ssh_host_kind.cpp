// `ssh`: a machine reached with ssh (a TPU VM). The worker bundle is installed there through the
// same login, and every worker of the host rides one shared connection (ControlMaster).
#include "tpu/host/content_hash.h"
#include "tpu/host/host_config.h"
#include "tpu/host/host_kind.h"

namespace mk::tpu {

namespace {
class SshHostKind : public HostKind {
 public:
  std::string_view name() const override { return "ssh"; }

  void read_settings(const nlohmann::json& j, HostConfig& host) const override {
    host.destination = j.value("destination", std::string());
    host.port = j.value("port", 0);
    host.identity_file = j.value("identityFile", std::string());
    host.ssh_options = j.value("sshOptions", std::vector<std::string>{});
  }

  std::string check_settings(const HostConfig& host) const override {
    return host.destination.empty() ? "ssh needs a destination (user@host)" : "";
  }

  bool has_remote_shell() const override { return true; }

  std::vector<std::string> remote_shell(const HostConfig& host,
                                        const std::string& command) const override {
    // Connection sharing: later commands reuse the first login. The socket is keyed by the
    // identity and options too, so a host entry with another key never rides an existing login.
    const std::string credentials =
        sha256_hex(host.identity_file + "\n" + shell_command(host.ssh_options)).substr(0, 12);
    std::vector<std::string> argv = {
        "ssh", "-T",
        "-o",  "BatchMode=yes",
        "-o",  "ConnectTimeout=" + std::to_string(host.connect_timeout_s),
        "-o",  "ControlMaster=auto",
        "-o",  "ControlPath=/tmp/maxkernel-ssh-" + credentials + "-%C",
        "-o",  "ControlPersist=60"};
    if (host.port > 0) {
      argv.push_back("-p");
      argv.push_back(std::to_string(host.port));
    }
    if (!host.identity_file.empty()) {
      argv.push_back("-i");
      argv.push_back(host.identity_file);
    }
    for (const std::string& o : host.ssh_options) {
      argv.push_back("-o");
      argv.push_back(o);
    }
    argv.push_back("--");
    argv.push_back(host.destination);
    argv.push_back(command);
    return argv;
  }
};
}  // namespace

const HostKind& ssh_host_kind() {
  static const SshHostKind kind;
  return kind;
}

}  // namespace mk::tpu
