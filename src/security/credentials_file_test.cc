#include "src/security/credentials_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace shoal::security {
namespace {

class CredentialsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-credentials-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    file_ = root_ + "/config/shoal/credentials";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  static ClusterCredentials Entry(const std::string& cluster, const std::string& dir) {
    return {.cluster = cluster,
            .user = "admin",
            .ca = dir + "/ca.crt",
            .cert = dir + "/client.admin.crt",
            .key = dir + "/client.admin.key"};
  }

  std::string root_;
  std::string file_;
};

TEST_F(CredentialsFileTest, EntriesAreFoundByCoordinatorAddress) {
  ASSERT_TRUE(RegisterCredentials(file_, Entry("shoal://127.0.0.1:7400", "/a")).ok());
  ASSERT_TRUE(RegisterCredentials(file_, Entry("shoal://10.0.0.1:7400,10.0.0.2:7400", "/b")).ok());
  struct stat st {};
  ASSERT_EQ(::stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto local = ResolveClientTls({.credentials_file = file_}, "127.0.0.1:7400");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  ASSERT_TRUE(local->has_value());
  EXPECT_EQ((*local)->ca_cert, "/a/ca.crt");
  EXPECT_EQ((*local)->key, "/a/client.admin.key");
  // Any one coordinator of the entry finds it.
  auto remote = ResolveClientTls({.credentials_file = file_}, "10.0.0.2:7400");
  ASSERT_TRUE(remote.ok() && remote->has_value());
  EXPECT_EQ((*remote)->cert, "/b/client.admin.crt");
  // A loopback cluster is found by any loopback name of its port, and by none of another port.
  for (const char* address : {"localhost:7400", "LocalHost:7400", "[::1]:7400"}) {
    auto same = ResolveClientTls({.credentials_file = file_}, address);
    ASSERT_TRUE(same.ok() && same->has_value()) << address;
    EXPECT_EQ((*same)->ca_cert, "/a/ca.crt") << address;
  }
  EXPECT_FALSE(ResolveClientTls({.credentials_file = file_}, "localhost:7401").ok());
  // With two entries, an address of neither is an error naming every way out.
  auto none = ResolveClientTls({.credentials_file = file_}, "127.0.0.1:9999");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  const std::string message(MessageOf(none.status()));
  for (const char* word : {"--certs-dir", "--insecure", "SHOAL_CREDENTIALS", "127.0.0.1:7400"}) {
    EXPECT_NE(message.find(word), std::string::npos) << word << " in " << message;
  }
}

TEST_F(CredentialsFileTest, ARestartedClusterReplacesItsEntry) {
  ASSERT_TRUE(RegisterCredentials(file_, Entry("shoal://127.0.0.1:7400", "/old")).ok());
  ASSERT_TRUE(RegisterCredentials(file_, Entry("127.0.0.1:7400", "/new")).ok());
  auto entries = ReadCredentialsFile(file_);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ(entries->front().ca, "/new/ca.crt");
}

TEST_F(CredentialsFileTest, ASoleEntryServesAnyAddress) {
  // e.g. `shoal failpoint --target NODE` of the one cluster the file knows.
  ASSERT_TRUE(RegisterCredentials(file_, Entry("shoal://127.0.0.1:7400", "/a")).ok());
  auto node = ResolveClientTls({.credentials_file = file_}, "127.0.0.1:7403");
  ASSERT_TRUE(node.ok() && node->has_value());
  EXPECT_EQ((*node)->ca_cert, "/a/ca.crt");
}

TEST_F(CredentialsFileTest, APasswordMakesTheClientSendItsUser) {
  ClusterCredentials entry = Entry("shoal://127.0.0.1:7400", "/a");
  ASSERT_TRUE(RegisterCredentials(file_, entry).ok());
  auto by_certificate = ResolveClientTls({.credentials_file = file_}, "127.0.0.1:7400");
  ASSERT_TRUE(by_certificate.ok() && by_certificate->has_value());
  EXPECT_TRUE((*by_certificate)->user.empty());
  EXPECT_TRUE((*by_certificate)->password.empty());

  entry.user = "alice";
  entry.password = "alice's password";
  ASSERT_TRUE(RegisterCredentials(file_, entry).ok());
  auto entries = ReadCredentialsFile(file_);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ(entries->front().password, "alice's password");
  auto by_password = ResolveClientTls({.credentials_file = file_}, "127.0.0.1:7400");
  ASSERT_TRUE(by_password.ok() && by_password->has_value());
  EXPECT_EQ((*by_password)->user, "alice");
  EXPECT_EQ((*by_password)->password, "alice's password");
  EXPECT_EQ((*by_password)->cert, "/a/client.admin.crt");
}

TEST_F(CredentialsFileTest, RelativePathsAreRelativeToTheFile) {
  std::filesystem::create_directories(root_ + "/copy");
  std::ofstream(root_ + "/copy/credentials")
      << R"({"clusters": [{"cluster": "shoal://h:1", "user": "u", "ca": "certs/ca.crt",
            "cert": "certs/client.u.crt", "key": "certs/client.u.key", "password": "later"}]})";
  auto entries = ReadCredentialsFile(root_ + "/copy/credentials");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  EXPECT_EQ(entries->front().ca, root_ + "/copy/certs/ca.crt");
  // An unknown field (a later password) is kept when another cluster registers.
  ASSERT_TRUE(RegisterCredentials(root_ + "/copy/credentials", Entry("shoal://x:2", "/x")).ok());
  std::ifstream in(root_ + "/copy/credentials");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"password\""), std::string::npos);
}

TEST_F(CredentialsFileTest, ExplicitChoicesWin) {
  auto insecure = ResolveClientTls({.insecure = true}, "h:1");
  ASSERT_TRUE(insecure.ok());
  EXPECT_FALSE(insecure->has_value());
  auto dir = ResolveClientTls({.certs_dir = "/c", .user = "bob"}, "h:1");
  ASSERT_TRUE(dir.ok() && dir->has_value());
  EXPECT_EQ((*dir)->cert, "/c/client.bob.crt");
  auto admin = ResolveClientTls({.certs_dir = "/c"}, "h:1");
  ASSERT_TRUE(admin.ok() && admin->has_value());
  EXPECT_EQ((*admin)->key, "/c/client.admin.key");
  EXPECT_EQ(ResolveClientTls({.insecure = true, .certs_dir = "/c"}, "h:1").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveClientTls({.certs_dir = "/c", .user = "node"}, "h:1").status().code(),
            StatusCode::kInvalidArgument);
}

// A user named without a certs directory would be ignored (the credentials file's entry decides
// who the client is): refused, naming the way to run as that user; with --insecure, too.
TEST_F(CredentialsFileTest, AUserWithoutACertsDirectoryIsRefused) {
  ASSERT_TRUE(RegisterCredentials(file_, Entry("shoal://127.0.0.1:7400", "/a")).ok());
  auto refused = ResolveClientTls({.user = "bob", .credentials_file = file_}, "127.0.0.1:7400");
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status();
  const std::string message(MessageOf(refused.status()));
  for (const char* word :
       {"--user bob", "--certs-dir", "shoal credentials add --certs-dir DIR --user bob"}) {
    EXPECT_NE(message.find(word), std::string::npos) << word << " in " << message;
  }
  EXPECT_EQ(ResolveClientTls({.insecure = true, .user = "bob"}, "h:1").status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(CredentialsFileTest, MissingOrBrokenFilesSaySo) {
  auto missing = ResolveClientTls({.credentials_file = root_ + "/nothing"}, "h:1");
  EXPECT_EQ(missing.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(MessageOf(missing.status())).find("does not exist"), std::string::npos);
  std::ofstream(root_ + "/broken") << "{not json";
  EXPECT_EQ(ReadCredentialsFile(root_ + "/broken").status().code(), StatusCode::kInvalidArgument);
  std::ofstream(root_ + "/partial") << R"({"clusters": [{"cluster": "shoal://h:1"}]})";
  EXPECT_EQ(ReadCredentialsFile(root_ + "/partial").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(CredentialsFileTest, TheEnvironmentNamesTheDefaultFile) {
  ::setenv("SHOAL_CREDENTIALS", file_.c_str(), 1);
  EXPECT_EQ(DefaultCredentialsPath(), file_);
  ::unsetenv("SHOAL_CREDENTIALS");
  ::setenv("XDG_CONFIG_HOME", "/xdg", 1);
  EXPECT_EQ(DefaultCredentialsPath(), "/xdg/shoal/credentials");
  ::unsetenv("XDG_CONFIG_HOME");
  ::setenv("HOME", "/home/ann", 1);
  EXPECT_EQ(DefaultCredentialsPath(), "/home/ann/.config/shoal/credentials");
}

}  // namespace
}  // namespace shoal::security
