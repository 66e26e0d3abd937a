#include "src/security/revocation_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "src/security/certificates.h"
#include "src/security/revocation.h"

namespace shoal::security {
namespace {

class RevocationCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-revocation-cache-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    dir_ = root_ + "/certs";
    ASSERT_TRUE(CreateCa({.certs_dir = dir_}).ok());
    ASSERT_TRUE(CreateNodeCert({.certs_dir = dir_}).ok());
    for (const char* user : {"alice", "bob", "carol"}) {
      ASSERT_TRUE(CreateClientCert({.certs_dir = dir_, .user = user}).ok());
    }
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  static std::string Pem(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string ClientPem(const std::string& user) const { return Pem(ClientCertPath(dir_, user)); }

  RevocationCache MakeCache(size_t max_cached = kMaxCachedPeerCertificates) {
    return RevocationCache({.ca_path = CaCertPath(dir_),
                            .crl_dir = DefaultCrlDir(CaCertPath(dir_)),
                            .reread_interval = std::chrono::seconds(1),
                            .max_cached = max_cached,
                            .now = [this] { return now_; }});
  }

  Status Revoke(const std::string& user) {
    return security::Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(dir_, user)}})
        .status();
  }

  std::string root_;
  std::string dir_;
  RevocationClock::time_point now_ = RevocationClock::time_point() + std::chrono::hours(1);
};

// A revocation counts from the first check after the reread interval, for a certificate that
// was cached as good; the others stay good; the certificates are parsed once each.
TEST_F(RevocationCacheTest, NewGenerationInvalidatesCachedDecisions) {
  RevocationCache cache = MakeCache();
  EXPECT_TRUE(cache.Check(ClientPem("alice")).ok());
  EXPECT_TRUE(cache.Check(ClientPem("bob")).ok());
  EXPECT_EQ(cache.generation(), 1u);  // the missing directory, read once
  EXPECT_EQ(cache.TEST_parses(), 2u);

  ASSERT_TRUE(Revoke("alice").ok());
  // Within the interval the directory is not listed again: the cached decision stands.
  now_ += std::chrono::milliseconds(999);
  EXPECT_TRUE(cache.Check(ClientPem("alice")).ok());
  EXPECT_EQ(cache.generation(), 1u);

  now_ += std::chrono::milliseconds(1);
  const Status refused = cache.Check(ClientPem("alice"));
  EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated) << refused;
  const std::string serial = ReadCertificate(ClientCertPath(dir_, "alice"))->serial_hex;
  EXPECT_NE(MessageOf(refused).find("certificate serial " + serial + " ('alice') was revoked"),
            std::string_view::npos)
      << refused;
  EXPECT_EQ(cache.generation(), 2u);
  EXPECT_TRUE(cache.Check(ClientPem("bob")).ok());
  EXPECT_EQ(cache.TEST_parses(), 2u) << "a new generation parses no certificate again";

  // An unchanged directory is not read again.
  now_ += std::chrono::seconds(5);
  EXPECT_FALSE(cache.Check(ClientPem("alice")).ok());
  EXPECT_EQ(cache.generation(), 2u);

  ASSERT_TRUE(Revoke("bob").ok());
  now_ += std::chrono::seconds(1);
  EXPECT_EQ(cache.Check(ClientPem("bob")).code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(cache.generation(), 3u);
  EXPECT_FALSE(cache.Check(ClientPem("alice")).ok());
  EXPECT_TRUE(cache.Check(Pem(NodeCertPath(dir_))).ok());
  EXPECT_EQ(cache.TEST_parses(), 3u);
}

TEST_F(RevocationCacheTest, CacheSizeIsBounded) {
  RevocationCache cache = MakeCache(/*max_cached=*/2);
  for (int round = 0; round < 3; ++round) {
    for (const char* user : {"alice", "bob", "carol"}) {
      EXPECT_TRUE(cache.Check(ClientPem(user)).ok());
      EXPECT_LE(cache.TEST_cached(), 2u);
    }
  }
  EXPECT_TRUE(cache.Check(Pem(NodeCertPath(dir_))).ok());
  EXPECT_LE(cache.TEST_cached(), 2u);
}

TEST_F(RevocationCacheTest, BadPemIsRefusedAndNotCached) {
  RevocationCache cache = MakeCache();
  EXPECT_EQ(cache.Check("not a certificate").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.TEST_cached(), 0u);
}

// A CRL file that cannot be read keeps the lists read before, as OpenSSL keeps the CRLs it loaded.
TEST_F(RevocationCacheTest, UnreadableCrlKeepsThePreviousLists) {
  RevocationCache cache = MakeCache();
  auto first = security::Revoke({.certs_dir = dir_, .cert_files = {ClientCertPath(dir_, "alice")}});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(cache.Check(ClientPem("alice")).ok());
  const uint64_t generation = cache.generation();

  ASSERT_EQ(first->path.substr(first->path.size() - 3), ".r0");
  std::ofstream(first->path.substr(0, first->path.size() - 1) + "1") << "no CRL\n";
  now_ += std::chrono::seconds(1);
  EXPECT_FALSE(cache.Check(ClientPem("alice")).ok());
  EXPECT_TRUE(cache.Check(ClientPem("bob")).ok());
  EXPECT_EQ(cache.generation(), generation);
}

}  // namespace
}  // namespace shoal::security
