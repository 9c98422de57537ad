// The certificate-authority file HTTPS uses when the packaged (Debian) libcurl runs on another
// distribution: SSL_CERT_FILE wins, Debian's own file keeps libcurl's default, else the first
// bundle found where other distributions keep theirs.
#include "agents/llm/ca_bundle.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace {

struct FakeSystem {
  std::map<std::string, std::string> env;
  std::set<std::string> files;

  std::optional<std::string> choose() const {
    return mk::llm::ca_bundle_override(
        [this](const char* name) {
          const auto it = env.find(name);
          return it == env.end() ? nullptr : it->second.c_str();
        },
        [this](const std::string& path) { return files.count(path) > 0; });
  }
};

TEST(CaBundle, DebianKeepsLibcurlsDefault) {
  const FakeSystem debian{{}, {"/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/cert.pem"}};
  EXPECT_EQ(debian.choose(), std::nullopt);
}

TEST(CaBundle, FedoraGetsItsOwnBundle) {
  const FakeSystem fedora{{}, {"/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}};
  EXPECT_EQ(fedora.choose(), "/etc/pki/tls/certs/ca-bundle.crt");
  const FakeSystem alpine{{}, {"/etc/ssl/cert.pem"}};
  EXPECT_EQ(alpine.choose(), "/etc/ssl/cert.pem");
}

TEST(CaBundle, SslCertFileWinsAndAnEmptyOneIsIgnored) {
  const FakeSystem chosen{{{"SSL_CERT_FILE", "/opt/corp/ca.pem"}},
                          {"/etc/ssl/certs/ca-certificates.crt"}};
  EXPECT_EQ(chosen.choose(), "/opt/corp/ca.pem");
  const FakeSystem empty{{{"SSL_CERT_FILE", ""}}, {"/etc/ssl/certs/ca-certificates.crt"}};
  EXPECT_EQ(empty.choose(), std::nullopt);
}

TEST(CaBundle, NoBundleAnywhereKeepsTheDefault) {
  EXPECT_EQ(FakeSystem{}.choose(), std::nullopt);
}

}  // namespace
