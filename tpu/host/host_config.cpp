#include "tpu/host/host_config.h"

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace mk::tpu {

namespace {
// "local, ssh, command or ray": the registered kinds, for the message naming a wrong one.
std::string kind_names() {
  const std::vector<const HostKind*> kinds = host_kinds();
  std::string out;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) out += i + 1 == kinds.size() ? " or " : ", ";
    out += kinds[i]->name();
  }
  return out;
}
}  // namespace

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
  return host.kind->remote_shell(host, remote_command);
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
    const std::string kind = j.value("kind", std::string(local_host_kind().name()));
    h.kind = find_host_kind(kind);
    if (!h.kind) {
      error = "host '" + h.name + "': kind must be " + kind_names() + ", not '" + kind + "'";
      return std::nullopt;
    }
    h.definition = j;
    h.python = j.value("python", h.python);
    h.connect_timeout_s = j.value("connectTimeoutSeconds", h.connect_timeout_s);
    h.remote_dir = j.value("remoteDir", h.remote_dir);
    h.kind->read_settings(j, h);
    h.compile_slots = j.value("compileSlots", h.compile_slots);
    h.timing_slots = j.value("timingSlots", h.timing_slots);
    if (j.contains("workerNice")) h.worker_nice = j.at("workerNice").get<int>();
    h.request_timeout = std::chrono::milliseconds(
        j.value("requestTimeoutMs", static_cast<int64_t>(h.request_timeout.count())));
  } catch (const nlohmann::json::exception& e) {
    error = std::string("host settings: ") + e.what();
    return std::nullopt;
  }
  if (const std::string why = h.kind->check_settings(h); !why.empty()) {
    error = "host '" + h.name + "': " + why;
    return std::nullopt;
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
