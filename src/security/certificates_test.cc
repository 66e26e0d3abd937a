#include "src/security/certificates.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include "src/security/tls_files.h"

namespace shoal::security {
namespace {

class CertificatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-certs-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    dir_ = root_ + "/certs";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void CreateCluster(const std::string& dir) {
    ASSERT_TRUE(CreateCa({.certs_dir = dir}).ok());
    ASSERT_TRUE(CreateNodeCert({.certs_dir = dir, .hosts = {"db1.example.com", "10.1.2.3"}}).ok());
    ASSERT_TRUE(CreateClientCert({.certs_dir = dir, .user = "alice"}).ok());
  }

  std::string root_;
  std::string dir_;
};

unsigned ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

// X509_verify_cert on `cert_path` against the roots of `ca_path`, with OpenSSL directly (not
// through VerifyCertificate), and for the TLS purpose the peer will check.
bool ChainVerifies(const std::string& ca_path, const std::string& cert_path, int purpose) {
  X509_STORE* store = X509_STORE_new();
  EXPECT_EQ(X509_STORE_load_file(store, ca_path.c_str()), 1);
  FILE* file = std::fopen(cert_path.c_str(), "r");
  X509* cert = PEM_read_X509(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  X509_STORE_CTX* context = X509_STORE_CTX_new();
  X509_STORE_CTX_init(context, store, cert, nullptr);
  X509_STORE_CTX_set_purpose(context, purpose);
  const bool ok = X509_verify_cert(context) == 1;
  X509_STORE_CTX_free(context);
  X509_free(cert);
  X509_STORE_free(store);
  return ok;
}

TEST_F(CertificatesTest, ChainVerifiesForItsPurpose) {
  CreateCluster(dir_);
  EXPECT_TRUE(ChainVerifies(CaCertPath(dir_), NodeCertPath(dir_), X509_PURPOSE_SSL_SERVER));
  EXPECT_TRUE(ChainVerifies(CaCertPath(dir_), NodeCertPath(dir_), X509_PURPOSE_SSL_CLIENT));
  EXPECT_TRUE(
      ChainVerifies(CaCertPath(dir_), ClientCertPath(dir_, "alice"), X509_PURPOSE_SSL_CLIENT));
  // A client certificate cannot serve.
  EXPECT_FALSE(
      ChainVerifies(CaCertPath(dir_), ClientCertPath(dir_, "alice"), X509_PURPOSE_SSL_SERVER));
  EXPECT_TRUE(VerifyCertificate(CaCertPath(dir_), NodeCertPath(dir_)).ok());
  EXPECT_TRUE(CheckTlsFiles(NodeTlsFiles(dir_)).ok());
  EXPECT_TRUE(CheckTlsFiles(ClientTlsFiles(dir_, "alice")).ok());
}

TEST_F(CertificatesTest, AnotherCaDoesNotVerify) {
  CreateCluster(dir_);
  const std::string other = root_ + "/other";
  CreateCluster(other);
  EXPECT_FALSE(
      ChainVerifies(CaCertPath(dir_), ClientCertPath(other, "alice"), X509_PURPOSE_SSL_CLIENT));
  EXPECT_FALSE(ChainVerifies(CaCertPath(dir_), NodeCertPath(other), X509_PURPOSE_SSL_SERVER));
  const Status status = VerifyCertificate(CaCertPath(dir_), NodeCertPath(other));
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated) << status.ToString();
  // The two CAs have different names, so logs tell them apart.
  EXPECT_NE(ReadCertificate(CaCertPath(dir_))->common_name,
            ReadCertificate(CaCertPath(other))->common_name);
  // A bundle of both CAs (a CA rotation's middle step) trusts both.
  const std::string bundle = root_ + "/bundle.crt";
  std::filesystem::copy_file(CaCertPath(dir_), bundle);
  {
    FILE* out = std::fopen(bundle.c_str(), "a");
    FILE* in = std::fopen(CaCertPath(other).c_str(), "r");
    for (int c = std::fgetc(in); c != EOF; c = std::fgetc(in)) std::fputc(c, out);
    std::fclose(in);
    std::fclose(out);
  }
  EXPECT_TRUE(VerifyCertificate(bundle, NodeCertPath(dir_)).ok());
  EXPECT_TRUE(VerifyCertificate(bundle, NodeCertPath(other)).ok());
}

TEST_F(CertificatesTest, NodeCertificateNamesItsHostsAndLoopback) {
  CreateCluster(dir_);
  auto node = ReadCertificate(NodeCertPath(dir_));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->common_name, kNodeCommonName);
  EXPECT_EQ(node->dns_names, (std::vector<std::string>{"db1.example.com", "localhost"}));
  EXPECT_EQ(node->ip_addresses, (std::vector<std::string>{"10.1.2.3", "127.0.0.1", "::1"}));
  EXPECT_TRUE(node->server_auth);
  EXPECT_TRUE(node->client_auth);
  EXPECT_FALSE(node->is_ca);
  auto ca = ReadCertificate(CaCertPath(dir_));
  ASSERT_TRUE(ca.ok());
  EXPECT_TRUE(ca->is_ca);
  EXPECT_EQ(node->issuer_common_name, ca->common_name);
  auto client = ReadCertificate(ClientCertPath(dir_, "alice"));
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(client->common_name, "alice");
  EXPECT_TRUE(client->client_auth);
  EXPECT_FALSE(client->server_auth);
  EXPECT_TRUE(client->dns_names.empty());
}

TEST_F(CertificatesTest, LifetimesAreTheDocumentedOnes) {
  CreateCluster(dir_);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  constexpr int64_t kDay = 86400;
  auto ca = ReadCertificate(CaCertPath(dir_));
  auto node = ReadCertificate(NodeCertPath(dir_));
  ASSERT_TRUE(ca.ok() && node.ok());
  EXPECT_LE(ca->not_before_unix, now - 3000);  // backdated an hour
  EXPECT_NEAR(static_cast<double>(ca->not_after_unix - now),
              static_cast<double>(kCaLifetimeDays * kDay), 120.0);
  EXPECT_NEAR(static_cast<double>(node->not_after_unix - now),
              static_cast<double>(kLeafLifetimeDays * kDay), 120.0);
}

TEST_F(CertificatesTest, KeysAreWrittenOwnerOnly) {
  CreateCluster(dir_);
  EXPECT_EQ(ModeOf(CaKeyPath(dir_)), 0600u);
  EXPECT_EQ(ModeOf(NodeKeyPath(dir_)), 0600u);
  EXPECT_EQ(ModeOf(ClientKeyPath(dir_, "alice")), 0600u);
  EXPECT_EQ(ModeOf(CaCertPath(dir_)), 0644u);
  EXPECT_EQ(ModeOf(NodeCertPath(dir_)), 0644u);
  EXPECT_EQ(ModeOf(dir_), 0700u);  // created by CreateCa
  // No temporary file is left behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST_F(CertificatesTest, KeysMatchTheirCertificatesOnly) {
  CreateCluster(dir_);
  EXPECT_TRUE(CheckKeyMatches(NodeCertPath(dir_), NodeKeyPath(dir_)).ok());
  const Status wrong = CheckKeyMatches(NodeCertPath(dir_), ClientKeyPath(dir_, "alice"));
  EXPECT_EQ(wrong.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckTlsFiles({.ca_cert = CaCertPath(dir_),
                           .cert = NodeCertPath(dir_),
                           .key = ClientKeyPath(dir_, "alice")})
                .code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(CertificatesTest, ExistingFilesAreReplacedOnlyWhenAsked) {
  CreateCluster(dir_);
  const std::string serial = ReadCertificate(NodeCertPath(dir_))->serial_hex;
  const Status again = CreateNodeCert({.certs_dir = dir_, .hosts = {}});
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(std::string(MessageOf(again)).find("--overwrite"), std::string::npos);
  EXPECT_EQ(CreateCa({.certs_dir = dir_}).code(), StatusCode::kAlreadyExists);
  // Rotation: a new key and certificate from the same CA.
  ASSERT_TRUE(CreateNodeCert({.certs_dir = dir_, .hosts = {}, .overwrite = true}).ok());
  EXPECT_NE(ReadCertificate(NodeCertPath(dir_))->serial_hex, serial);
  EXPECT_TRUE(CheckTlsFiles(NodeTlsFiles(dir_)).ok());
}

TEST_F(CertificatesTest, CaKeyMayLiveElsewhere) {
  ASSERT_TRUE(CreateCa({.certs_dir = dir_}).ok());
  const std::string vault = root_ + "/ca.key";
  std::filesystem::rename(CaKeyPath(dir_), vault);
  EXPECT_EQ(CreateClientCert({.certs_dir = dir_, .user = "bob"}).code(), StatusCode::kNotFound);
  ASSERT_TRUE(CreateClientCert({.certs_dir = dir_, .ca_key = vault, .user = "bob"}).ok());
  EXPECT_TRUE(CheckTlsFiles(ClientTlsFiles(dir_, "bob")).ok());
}

TEST_F(CertificatesTest, BadInputIsRefused) {
  ASSERT_TRUE(CreateCa({.certs_dir = dir_}).ok());
  for (const char* host : {"a,b", "", "bad host", "-x.", "a..b", "DNS:x"}) {
    EXPECT_EQ(CreateNodeCert({.certs_dir = dir_, .hosts = {host}}).code(),
              StatusCode::kInvalidArgument)
        << host;
  }
  EXPECT_TRUE(CreateNodeCert({.certs_dir = dir_, .hosts = {"*.db.example.com", "fe80::1"}}).ok());
  for (const char* user : {"", "node", "a/b", ".x", "a b", "CN=x,O=y"}) {
    EXPECT_EQ(CreateClientCert({.certs_dir = dir_, .user = user}).code(),
              StatusCode::kInvalidArgument)
        << user;
  }
  EXPECT_EQ(CreateClientCert({.certs_dir = dir_, .user = "ok", .lifetime_days = 0}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateNodeCert({.certs_dir = root_ + "/none", .hosts = {}}).code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal::security
