#include "src/security/revocation.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include "src/security/certificates.h"
#include "src/security/tls_files.h"

namespace shoal::security {
namespace {

class RevocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-revocation-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    dir_ = root_ + "/certs";
    ASSERT_TRUE(CreateCa({.certs_dir = dir_}).ok());
    ASSERT_TRUE(CreateNodeCert({.certs_dir = dir_}).ok());
    ASSERT_TRUE(CreateClientCert({.certs_dir = dir_, .user = "alice"}).ok());
    ASSERT_TRUE(CreateClientCert({.certs_dir = dir_, .user = "bob"}).ok());
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string Serial(const std::string& cert_path) {
    auto info = ReadCertificate(cert_path);
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    return info.ok() ? info->serial_hex : "";
  }

  std::string root_;
  std::string dir_;
};

// X509_CRL_verify against the CA certificate, with OpenSSL directly.
bool CrlVerifies(const std::string& ca_path, const std::string& crl_path) {
  FILE* ca_file = std::fopen(ca_path.c_str(), "r");
  X509* ca = PEM_read_X509(ca_file, nullptr, nullptr, nullptr);
  std::fclose(ca_file);
  FILE* crl_file = std::fopen(crl_path.c_str(), "r");
  X509_CRL* crl = PEM_read_X509_CRL(crl_file, nullptr, nullptr, nullptr);
  std::fclose(crl_file);
  const bool ok =
      ca != nullptr && crl != nullptr && X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1;
  X509_CRL_free(crl);
  X509_free(ca);
  return ok;
}

TEST_F(RevocationTest, RevokedCertificateIsListedInACrlTheCaSigned) {
  auto list = Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(dir_, "alice")}});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->revoked.size(), 1u);
  EXPECT_EQ(list->revoked[0].serial_hex, Serial(ClientCertPath(dir_, "alice")));
  EXPECT_EQ(list->number, 1u);
  EXPECT_LT(list->last_update_unix, list->next_update_unix);
  // Named as OpenSSL's hashed directory lookup reads it, in the default directory.
  EXPECT_EQ(std::filesystem::path(list->path).parent_path(), DefaultCrlDir(CaCertPath(dir_)));
  EXPECT_EQ(std::filesystem::path(list->path).extension(), ".r0");
  EXPECT_EQ(std::filesystem::path(list->path).stem().string().size(), 8u);
  EXPECT_TRUE(CrlVerifies(CaCertPath(dir_), list->path));
  // nextUpdate defaults to the CA's expiry.
  auto ca = ReadCertificate(CaCertPath(dir_));
  ASSERT_TRUE(ca.ok());
  EXPECT_EQ(list->next_update_unix, ca->not_after_unix);
  EXPECT_EQ(list->issuer_common_name, ca->common_name);
}

TEST_F(RevocationTest, RevokedListGrowsAndKeepsEarlierSerials) {
  auto first = Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(dir_, "alice")}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string node_serial = Serial(NodeCertPath(dir_));
  // By serial this time, in the colon form `openssl x509 -serial` users may paste.
  std::string with_colons;
  for (size_t i = 0; i < node_serial.size(); ++i) {
    if (i > 0 && i % 2 == 0) with_colons += ':';
    with_colons += node_serial[i];
  }
  auto second = Revoke({.certs_dir = dir_, .serials = {with_colons}});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->number, 2u);
  EXPECT_GT(second->last_update_unix, first->last_update_unix);
  EXPECT_EQ(std::filesystem::path(second->path).extension(), ".r1");
  ASSERT_EQ(second->revoked.size(), 2u);
  std::vector<std::string> serials = {second->revoked[0].serial_hex, second->revoked[1].serial_hex};
  EXPECT_NE(std::find(serials.begin(), serials.end(), Serial(ClientCertPath(dir_, "alice"))),
            serials.end());
  EXPECT_NE(std::find(serials.begin(), serials.end(), node_serial), serials.end());
  // OpenSSL loads .r0 and .r1 and takes the newer: the node is revoked, bob still is not.
  const std::string crl_dir = DefaultCrlDir(CaCertPath(dir_));
  EXPECT_EQ(VerifyNotRevoked(CaCertPath(dir_), crl_dir, NodeCertPath(dir_)).code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(VerifyNotRevoked(CaCertPath(dir_), crl_dir, ClientCertPath(dir_, "alice")).code(),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(VerifyNotRevoked(CaCertPath(dir_), crl_dir, ClientCertPath(dir_, "bob")).ok());
  // Revoking a serial again adds nothing; the earlier files stay for processes that read them.
  auto third = Revoke({.certs_dir = dir_, .serials = {node_serial}});
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->revoked.size(), 2u);
  EXPECT_EQ(third->number, 3u);
  EXPECT_TRUE(std::filesystem::exists(first->path));
  auto lists = ReadRevocationLists(CaCertPath(dir_), crl_dir);
  ASSERT_TRUE(lists.ok()) << lists.status().ToString();
  ASSERT_EQ(lists->size(), 1u);
  EXPECT_EQ((*lists)[0].path, third->path);
  EXPECT_EQ((*lists)[0].revoked.size(), 2u);
}

TEST_F(RevocationTest, VerifyNotRevokedRefusesOnlyTheRevoked) {
  const std::string crl_dir = DefaultCrlDir(CaCertPath(dir_));
  // No directory yet: nothing is revoked.
  EXPECT_TRUE(VerifyNotRevoked(CaCertPath(dir_), crl_dir, ClientCertPath(dir_, "alice")).ok());
  ASSERT_TRUE(Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(dir_, "alice")}}).ok());
  const Status refused = VerifyNotRevoked(CaCertPath(dir_), crl_dir, ClientCertPath(dir_, "alice"));
  EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(refused.ToString().find("is revoked"), std::string::npos) << refused.ToString();
  EXPECT_TRUE(VerifyNotRevoked(CaCertPath(dir_), crl_dir, ClientCertPath(dir_, "bob")).ok());
  EXPECT_TRUE(VerifyNotRevoked(CaCertPath(dir_), crl_dir, NodeCertPath(dir_)).ok());
  // A process whose own certificate is revoked does not start.
  EXPECT_EQ(CheckTlsFiles(ClientTlsFiles(dir_, "alice")).code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(CheckTlsFiles(ClientTlsFiles(dir_, "bob")).ok());
  TlsFiles elsewhere = ClientTlsFiles(dir_, "alice");
  elsewhere.crl_dir = root_ + "/empty";
  EXPECT_TRUE(CheckTlsFiles(elsewhere).ok());
}

TEST_F(RevocationTest, ForeignCertificatesAndCrlsAreRefused) {
  const std::string other = root_ + "/other";
  ASSERT_TRUE(CreateCa({.certs_dir = other}).ok());
  ASSERT_TRUE(CreateClientCert({.certs_dir = other, .user = "mallory"}).ok());
  auto foreign = Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(other, "mallory")}});
  EXPECT_EQ(foreign.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(foreign.status().ToString().find("was not issued by"), std::string::npos)
      << foreign.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(DefaultCrlDir(CaCertPath(dir_))));

  // The other CA's CRL does not verify against this CA, and is not extended by it.
  auto other_list = Revoke({.certs_dir = other, .cert_files = {ClientCertPath(other, "mallory")}});
  ASSERT_TRUE(other_list.ok()) << other_list.status().ToString();
  auto read = ReadRevocationList(CaCertPath(dir_), other_list->path);
  EXPECT_EQ(read.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(read.status().ToString().find("is not a CRL signed by"), std::string::npos)
      << read.status().ToString();
  // Planted under this CA's name, it is refused rather than extended.
  auto mine = Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(dir_, "bob")}});
  ASSERT_TRUE(mine.ok());
  const std::string next = mine->path.substr(0, mine->path.size() - 1) + "1";
  std::filesystem::copy_file(other_list->path, next);
  auto refused = Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(dir_, "alice")}});
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().ToString().find(next), std::string::npos)
      << refused.status().ToString();
}

TEST_F(RevocationTest, BadInputIsRefused) {
  EXPECT_EQ(Revoke({.certs_dir = dir_, .serials = {"xyz"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Revoke({.certs_dir = dir_, .serials = {Serial(CaCertPath(dir_))}}).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(Revoke({.certs_dir = dir_, .cert_files = {root_ + "/missing.crt"}}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Revoke({.certs_dir = dir_, .serials = {"0A"}, .lifetime_days = -1}).status().code(),
            StatusCode::kInvalidArgument);
  auto short_lived = Revoke({.certs_dir = dir_, .serials = {"0x0A"}, .lifetime_days = 7});
  ASSERT_TRUE(short_lived.ok()) << short_lived.status().ToString();
  EXPECT_EQ(short_lived->revoked[0].serial_hex, "0A");
  EXPECT_NEAR(short_lived->next_update_unix - std::time(nullptr), 7 * 86400, 60);
}

}  // namespace
}  // namespace shoal::security
