#pragma once

// The users of a cluster and their roles (docs/security.md, "Users and roles"): the model the
// coordinator keeps in its metadata store and every serving process checks requests against.
//
// A user has a name (CheckUserName: the rule of client certificates, whose common name is the
// user), a role, and an Argon2id password hash (security/passwords.h), or none for a user who
// authenticates only with a client certificate. Roles nest: kRead < kWrite < kAdmin, and a role
// allows every request its lower roles allow (which request needs which role:
// net/request_roles.h).
//
// A table holds at most kMaxUsers users; Add refuses one more. The whole table is a single value
// of the metadata store (at most 1 MiB) and travels whole to every node on each change: at about
// 200 bytes a user (a 64-byte name and a hash), 1000 users stay near 200 KiB, and users are the
// people and services that reach a cluster, not the users of an application. Decode takes a
// larger table (one stored under a higher limit) as it is.
//
// UserTable is an immutable value with a version that grows by one with every change, so a
// process that holds version v knows whether a table it is shown is newer. Its JSON form is what
// the metadata store holds (Encode / Decode round-trip exactly).
//
// Thread-safety: values; a const UserTable may be read from many threads.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace shoal::security {

enum class Role : uint8_t {
  kRead = 0,   // reads: get, query, count, scan, status, resolve, watching the map
  kWrite = 1,  // kRead and every write
  kAdmin = 2,  // kWrite and cluster administration: nodes, moves, thresholds, replicas,
               // failpoints, users
};

[[nodiscard]] std::string_view ToString(Role role);
// "read", "write" or "admin"; kInvalidArgument naming the three otherwise.
[[nodiscard]] StatusOr<Role> ParseRole(std::string_view text);
// Whether a user holding `held` may do what needs `needed`.
[[nodiscard]] bool Allows(Role held, Role needed);

struct User {
  std::string name{};
  Role role = Role::kRead;
  // Encoded Argon2id hash; "" for a certificate-only user (no password is accepted).
  std::string password_hash{};

  friend bool operator==(const User&, const User&) = default;
};

inline constexpr size_t kMaxUsers = 1000;

class UserTable {
 public:
  UserTable() = default;

  [[nodiscard]] uint64_t version() const { return version_; }
  [[nodiscard]] const std::map<std::string, User, std::less<>>& users() const { return users_; }
  // nullptr if there is no such user.
  [[nodiscard]] const User* Find(std::string_view name) const;

  // Each returns the table with one change and the version one higher, or an error and no table:
  // kInvalidArgument for a bad name, hash or role; kAlreadyExists (Add) or kNotFound (the
  // others) for the user; kResourceExhausted naming kMaxUsers for an Add to a full table;
  // kFailedPrecondition for a Remove or Grant that would leave no admin where there was one
  // (the cluster could never be administered again).
  [[nodiscard]] StatusOr<UserTable> Add(User user) const;
  [[nodiscard]] StatusOr<UserTable> Remove(std::string_view name) const;
  // `hash` "" makes the user certificate-only.
  [[nodiscard]] StatusOr<UserTable> SetPasswordHash(std::string_view name, std::string hash) const;
  [[nodiscard]] StatusOr<UserTable> Grant(std::string_view name, Role role) const;

  // Every name passes CheckUserName and is its map key; every hash is "" or an Argon2id hash.
  [[nodiscard]] Status CheckInvariants() const;

  // {"version": N, "users": [{"name": ..., "role": "read", "password_hash": ...}, ...]}.
  [[nodiscard]] std::string Encode() const;
  // kInvalidArgument (with what is wrong) for anything Encode does not make or that breaks the
  // invariants.
  [[nodiscard]] static StatusOr<UserTable> Decode(std::string_view json);

  // "v3 [alice:admin(password) bob:read(certificate)]": never a hash.
  [[nodiscard]] std::string DebugString() const;

  friend bool operator==(const UserTable&, const UserTable&) = default;

 private:
  uint64_t version_ = 0;
  std::map<std::string, User, std::less<>> users_{};
};

}  // namespace shoal::security
