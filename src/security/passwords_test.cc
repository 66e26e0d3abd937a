#include "src/security/passwords.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace shoal::security {
namespace {

TEST(PasswordsTest, HashVerifiesItsPasswordOnly) {
  auto hash = HashPassword("correct horse battery");
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_TRUE(hash->starts_with("$argon2id$")) << *hash;
  EXPECT_TRUE(CheckPasswordHash(*hash).ok());
  EXPECT_TRUE(VerifyPassword("correct horse battery", *hash).ok());
  const Status wrong = VerifyPassword("correct horse batterz", *hash);
  EXPECT_EQ(wrong.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong.message().find("horse"), std::string_view::npos);
}

TEST(PasswordsTest, HashesOfOnePasswordDifferBySalt) {
  auto a = HashPassword("same password");
  auto b = HashPassword("same password");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(VerifyPassword("same password", *b).ok());
}

TEST(PasswordsTest, HashRecordsTheDocumentedCost) {
  auto hash = HashPassword("cost is recorded");
  ASSERT_TRUE(hash.ok());
  EXPECT_NE(hash->find("m=19456,t=2,p=1"), std::string::npos) << *hash;
}

TEST(PasswordsTest, LengthAndCharactersAreChecked) {
  EXPECT_EQ(CheckPassword(std::string(kMinPasswordBytes - 1, 'a')).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckPassword(std::string(kMinPasswordBytes, 'a')).ok());
  EXPECT_TRUE(CheckPassword(std::string(kMaxPasswordBytes, 'a')).ok());
  const Status too_long = CheckPassword(std::string(kMaxPasswordBytes + 1, 'a'));
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.message().find("256"), std::string_view::npos) << too_long;
  EXPECT_EQ(CheckPassword("line\nbreak!").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckPassword(std::string("nul\0inside", 10)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HashPassword("short").status().code(), StatusCode::kInvalidArgument);
}

TEST(PasswordsTest, OverlongPasswordIsRefusedBeforeHashing) {
  auto hash = HashPassword("a fine password");
  ASSERT_TRUE(hash.ok());
  EXPECT_EQ(VerifyPassword(std::string(kMaxPasswordBytes + 1, 'a'), *hash).code(),
            StatusCode::kUnauthenticated);
}

TEST(PasswordsTest, MalformedHashIsInvalid) {
  EXPECT_EQ(CheckPasswordHash("").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckPasswordHash("$argon2i$v=19$m=4096,t=3,p=1$xx$yy").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyPassword("whatever123", "plaintext").code(), StatusCode::kInvalidArgument);
  // The right prefix but garbage after it does not verify.
  EXPECT_FALSE(VerifyPassword("whatever123", "$argon2id$garbage").ok());
}

TEST(PasswordsTest, GeneratedPasswordsAreValidAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string password = GeneratePassword();
    EXPECT_EQ(password.size(), kGeneratedPasswordChars);
    EXPECT_TRUE(CheckPassword(password).ok()) << password;
    for (char c : password) {
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << c;
    }
    seen.insert(password);
  }
  EXPECT_EQ(seen.size(), 50u);
}

TEST(PasswordsTest, DigestDependsOnKeyAndPassword) {
  const std::string key = NewPasswordDigestKey();
  const std::string other_key = NewPasswordDigestKey();
  EXPECT_EQ(key.size(), kPasswordDigestKeyBytes);
  EXPECT_NE(key, other_key);
  EXPECT_EQ(PasswordDigest(key, "password one"), PasswordDigest(key, "password one"));
  EXPECT_NE(PasswordDigest(key, "password one"), PasswordDigest(key, "password two"));
  EXPECT_NE(PasswordDigest(key, "password one"), PasswordDigest(other_key, "password one"));
}

// The dummy hash costs what a real one does: the same parameters in its encoded form.
TEST(PasswordsTest, DummyHashIsMadeOnceAtTheCostOfARealOne) {
  const StatusOr<std::string>& dummy = DummyPasswordHash();
  ASSERT_TRUE(dummy.ok()) << dummy.status();
  EXPECT_EQ(&DummyPasswordHash(), &dummy);
  EXPECT_TRUE(CheckPasswordHash(*dummy).ok());
  const std::string real = HashPassword("a real password").value();
  const auto parameters = [](const std::string& hash) {
    return hash.substr(0, hash.find('$', hash.find("m=")));
  };
  EXPECT_EQ(parameters(*dummy), parameters(real));
  EXPECT_EQ(VerifyPassword("a real password", *dummy).code(), StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace shoal::security
