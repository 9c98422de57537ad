#include "agents/llm/ca_bundle.h"

#include <array>
#include <cstdlib>
#include <filesystem>

namespace mk::llm {

namespace {

constexpr const char* kDebianBundle = "/etc/ssl/certs/ca-certificates.crt";
// Where other distributions keep theirs, as Go's crypto/x509 looks for them.
constexpr std::array<const char*, 4> kOtherBundles = {
    "/etc/pki/tls/certs/ca-bundle.crt",                   // Fedora, RHEL, CentOS
    "/etc/ssl/ca-bundle.pem",                             // openSUSE
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 7+ (extracted trust)
    "/etc/ssl/cert.pem",                                  // Alpine, Arch
};

}  // namespace

std::optional<std::string> ca_bundle_override(
    const std::function<const char*(const char*)>& env,
    const std::function<bool(const std::string&)>& exists) {
  if (const char* file = env("SSL_CERT_FILE"); file != nullptr && *file != '\0') return file;
  if (exists(kDebianBundle)) return std::nullopt;
  for (const char* bundle : kOtherBundles)
    if (exists(bundle)) return std::string(bundle);
  return std::nullopt;
}

std::optional<std::string> ca_bundle_override() {
  static const std::optional<std::string> chosen =
      ca_bundle_override([](const char* name) { return std::getenv(name); },
                         [](const std::string& path) {
                           std::error_code ec;
                           return std::filesystem::is_regular_file(path, ec);
                         });
  return chosen;
}

}  // namespace mk::llm
