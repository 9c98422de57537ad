#pragma once
// Which certificate-authority file HTTPS uses. The release package carries Debian's libcurl, which
// looks for /etc/ssl/certs/ca-certificates.crt; other distributions keep the bundle elsewhere
// (Fedora and RHEL: /etc/pki/tls/certs/ca-bundle.crt), so there LLM requests would fail to verify
// any server. SSL_CERT_FILE, OpenSSL's own variable, wins; else, only when Debian's file is
// missing, the first bundle found where other distributions keep it.
#include <functional>
#include <optional>
#include <string>

namespace mk::llm {

// The file to give CURLOPT_CAINFO, or nullopt to keep libcurl's own default.
// `env` reads an environment variable (nullptr when unset); `exists` says whether a file exists.
std::optional<std::string> ca_bundle_override(
    const std::function<const char*(const char*)>& env,
    const std::function<bool(const std::string&)>& exists);

// The same for this process: getenv and the real file system.
std::optional<std::string> ca_bundle_override();

}  // namespace mk::llm
