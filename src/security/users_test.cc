#include "src/security/users.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "src/security/passwords.h"

namespace shoal::security {
namespace {

const std::string& SomeHash() {
  static const std::string hash = HashPassword("a password for tests").value();
  return hash;
}

UserTable ThreeUsers() {
  UserTable table;
  table = table.Add({.name = "alice", .role = Role::kAdmin, .password_hash = SomeHash()}).value();
  table = table.Add({.name = "bob", .role = Role::kRead}).value();
  table = table.Add({.name = "carol_2", .role = Role::kWrite, .password_hash = SomeHash()}).value();
  return table;
}

TEST(RoleTest, RolesNest) {
  EXPECT_TRUE(Allows(Role::kAdmin, Role::kWrite));
  EXPECT_TRUE(Allows(Role::kAdmin, Role::kRead));
  EXPECT_TRUE(Allows(Role::kWrite, Role::kRead));
  EXPECT_TRUE(Allows(Role::kWrite, Role::kWrite));
  EXPECT_FALSE(Allows(Role::kWrite, Role::kAdmin));
  EXPECT_FALSE(Allows(Role::kRead, Role::kWrite));
}

TEST(RoleTest, ParseIsTheInverseOfToString) {
  for (Role role : {Role::kRead, Role::kWrite, Role::kAdmin}) {
    auto parsed = ParseRole(ToString(role));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, role);
  }
  const auto bad = ParseRole("root");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("read, write, admin"), std::string_view::npos);
}

TEST(UserTableTest, EveryChangeRaisesTheVersion) {
  UserTable table = ThreeUsers();
  EXPECT_EQ(table.version(), 3u);
  table = table.Grant("bob", Role::kWrite).value();
  EXPECT_EQ(table.version(), 4u);
  EXPECT_EQ(table.Find("bob")->role, Role::kWrite);
  table = table.SetPasswordHash("bob", SomeHash()).value();
  EXPECT_EQ(table.version(), 5u);
  EXPECT_EQ(table.Find("bob")->password_hash, SomeHash());
  table = table.SetPasswordHash("bob", "").value();
  EXPECT_TRUE(table.Find("bob")->password_hash.empty());
  table = table.Remove("bob").value();
  EXPECT_EQ(table.version(), 7u);
  EXPECT_EQ(table.Find("bob"), nullptr);
  EXPECT_TRUE(table.CheckInvariants().ok());
}

TEST(UserTableTest, RefusedChangesLeaveTheTable) {
  const UserTable table = ThreeUsers();
  EXPECT_EQ(table.Add({.name = "alice"}).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(table.Add({.name = "node"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table.Add({.name = "-x"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table.Add({.name = "dave", .password_hash = "plain"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(table.Remove("dave").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(table.Grant("dave", Role::kAdmin).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(table.SetPasswordHash("dave", SomeHash()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(table.SetPasswordHash("bob", "plain").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table.version(), 3u);
}

// The last admin can be neither removed nor given a lower role: nobody could administer the
// cluster again. With a second admin, either change goes through.
TEST(UserTableTest, TheLastAdminStays) {
  const UserTable table = ThreeUsers();
  for (const Status& refused :
       {table.Remove("alice").status(), table.Grant("alice", Role::kWrite).status()}) {
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused;
    EXPECT_NE(refused.ToString().find("last admin"), std::string::npos) << refused;
  }
  EXPECT_TRUE(table.Grant("alice", Role::kAdmin).ok());
  const UserTable two = table.Grant("bob", Role::kAdmin).value();
  EXPECT_TRUE(two.Remove("alice").ok());
  EXPECT_TRUE(two.Grant("alice", Role::kRead).ok());
  const UserTable one = two.Remove("alice").value();
  EXPECT_EQ(one.Remove("bob").status().code(), StatusCode::kFailedPrecondition);
  // Users of other roles come and go as before.
  EXPECT_TRUE(one.Remove("carol_2").ok());
}

// A full table refuses one more user, naming the limit, and changes nothing; it still fits the
// metadata store's 1 MiB value with the longest names and a hash for every user.
TEST(UserTableTest, AddPastTheUserLimitIsRefused) {
  UserTable table;
  for (size_t i = 0; i < kMaxUsers; ++i) {
    std::string name = fmt::format("user-{:04}-", i);
    name.resize(64, 'x');
    auto next = table.Add({.name = name, .role = Role::kAdmin, .password_hash = SomeHash()});
    ASSERT_TRUE(next.ok()) << i << ": " << next.status();
    table = std::move(*next);
  }
  ASSERT_EQ(table.users().size(), kMaxUsers);
  EXPECT_LT(table.Encode().size(), size_t{1} << 20);
  const auto refused = table.Add({.name = "one-too-many", .role = Role::kRead});
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find(fmt::format("the limit is {}", kMaxUsers)),
            std::string_view::npos)
      << refused.status();
  EXPECT_EQ(table.version(), kMaxUsers);
  EXPECT_EQ(table.Find("one-too-many"), nullptr);
  // One removed, one fits again; a full table still decodes.
  auto removed = table.Remove(table.users().begin()->first);
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(removed->Add({.name = "one-too-many", .role = Role::kRead}).ok());
  auto decoded = UserTable::Decode(table.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, table);
}

TEST(UserTableTest, EncodeDecodeEncodeIsStable) {
  const UserTable table = ThreeUsers();
  const std::string json = table.Encode();
  auto decoded = UserTable::Decode(json);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, table);
  EXPECT_EQ(decoded->Encode(), json);
  EXPECT_TRUE(decoded->CheckInvariants().ok());

  auto empty = UserTable::Decode(UserTable().Encode());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->version(), 0u);
  EXPECT_TRUE(empty->users().empty());
}

TEST(UserTableTest, DecodeRefusesBrokenTables) {
  for (const char* json : {
           "",
           "[]",
           R"({"users": []})",
           R"({"version": -1, "users": []})",
           R"({"version": 1})",
           R"({"version": 1, "users": [{"name": "a"}]})",
           R"({"version": 1, "users": [{"name": "a", "role": "root", "password_hash": ""}]})",
           R"({"version": 1, "users": [{"name": "node", "role": "read", "password_hash": ""}]})",
           R"({"version": 1, "users": [{"name": "a", "role": "read", "password_hash": "x"}]})",
           R"({"version": 2, "users": [{"name": "a", "role": "read", "password_hash": ""},
                                       {"name": "a", "role": "admin", "password_hash": ""}]})",
       }) {
    EXPECT_EQ(UserTable::Decode(json).status().code(), StatusCode::kInvalidArgument) << json;
  }
}

TEST(UserTableTest, DebugStringShowsNoHash) {
  const std::string text = ThreeUsers().DebugString();
  EXPECT_EQ(text, "v3 [alice:admin(password) bob:read(certificate) carol_2:write(password)]");
  EXPECT_EQ(text.find("argon2"), std::string::npos);
}

}  // namespace
}  // namespace shoal::security
