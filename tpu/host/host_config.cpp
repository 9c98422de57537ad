#include "tpu/host/host_config.h"

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tpu/host/content_hash.h"

namespace mk::tpu {

std::string default_local_python() {
  if (const char* p = std::getenv("MAXKERNEL_PYTHON"); p && *p) return p;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      if (std::filesystem::exists(dir / ".venv" / "bin" / "python", ec))
        return (dir / ".venv" / "bin" / "python").string();
    }
  }
  return "python3";
}

std::optional<HostConfig> ray_host_from_name(const std::string& name) {
  constexpr std::string_view prefix = "ray:";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  HostConfig h;
  h.name = name;
  h.kind = HostKind::Ray;
  h.address = name.substr(prefix.size());
  return h;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() &&
      arg.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
          std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

std::vector<std::string> remote_argv(const HostConfig& host, const std::string& remote_command) {
  if (host.kind == HostKind::Command) {
    std::vector<std::string> argv;
    for (const std::string& part : host.command_template) {
      std::string arg = part;
      const size_t at = arg.find("{command}");
      if (at != std::string::npos) arg.replace(at, 9, remote_command);
      argv.push_back(arg);
    }
    return argv;
  }
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
  argv.push_back(remote_command);
  return argv;
}

std::optional<HostConfig> parse_host_config(const std::string& json_text, std::string& error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    error = std::string("host settings are not valid JSON: ") + e.what();
    return std::nullopt;
  }
  if (!j.is_object()) {
    error = "a host must be an object";
    return std::nullopt;
  }
  HostConfig h;
  try {
    h.name = j.value("name", std::string("local"));
    const std::string kind = j.value("kind", std::string("local"));
    if (kind == "local") {
      h.kind = HostKind::Local;
    } else if (kind == "ssh") {
      h.kind = HostKind::Ssh;
    } else if (kind == "command") {
      h.kind = HostKind::Command;
    } else if (kind == "ray") {
      h.kind = HostKind::Ray;
    } else {
      error = "host '" + h.name + "': kind must be local, ssh, command or ray, not '" + kind + "'";
      return std::nullopt;
    }
    h.python = j.value("python", h.python);
    h.destination = j.value("destination", std::string());
    h.port = j.value("port", 0);
    h.identity_file = j.value("identityFile", std::string());
    h.ssh_options = j.value("sshOptions", std::vector<std::string>{});
    h.connect_timeout_s = j.value("connectTimeoutSeconds", h.connect_timeout_s);
    h.command_template = j.value("command", std::vector<std::string>{});
    h.remote_dir = j.value("remoteDir", h.remote_dir);
    h.address = j.value("address", std::string());
    h.device_resource = j.value("deviceResource", h.device_resource);
    h.compile_slots = j.value("compileSlots", h.compile_slots);
    h.timing_slots = j.value("timingSlots", h.timing_slots);
    if (j.contains("workerNice")) h.worker_nice = j.at("workerNice").get<int>();
    h.request_timeout = std::chrono::milliseconds(
        j.value("requestTimeoutMs", static_cast<int64_t>(h.request_timeout.count())));
  } catch (const nlohmann::json::exception& e) {
    error = std::string("host settings: ") + e.what();
    return std::nullopt;
  }
  if (h.kind == HostKind::Ssh && h.destination.empty()) {
    error = "host '" + h.name + "': ssh needs a destination (user@host)";
    return std::nullopt;
  }
  if (h.kind == HostKind::Ray && (h.address.empty() || h.device_resource.empty())) {
    error = "host '" + h.name + "': ray needs an address (what ray.init accepts: HOST:PORT, " +
            "ray://HOST:PORT or auto) and a non-empty deviceResource";
    return std::nullopt;
  }
  if (h.kind == HostKind::Command) {
    bool placeholder = false;
    for (const auto& part : h.command_template)
      placeholder |= part.find("{command}") != std::string::npos;
    if (!placeholder) {
      error = "host '" + h.name + "': the command template needs an argument containing {command}";
      return std::nullopt;
    }
  }
  if (h.worker_nice && (*h.worker_nice < 0 || *h.worker_nice > 19)) {
    error = "host '" + h.name + "': workerNice must be between 0 and 19";
    return std::nullopt;
  }
  if (h.compile_slots < 1 || (j.contains("timingSlots") && h.timing_slots < 1)) {
    error = "host '" + h.name + "': compileSlots and timingSlots must be at least 1";
    return std::nullopt;
  }
  return h;
}

}  // namespace mk::tpu
