#pragma once

// The cluster's users in its metadata (docs/security.md, "Users and roles"): the user table
// (security::UserTable, as JSON) under the key kUsersKey of the coordinator's MetadataStore,
// embedded or ZooKeeper, so that it survives a restart and a coordinator failover. Every change
// is a compare-and-set on the key's version, as the ShardMap's commits are: two coordinators
// (an old leader and a new one) never interleave a read and a write of the table, and the
// leader's writes go through its FencedMetadataStore.
//
// A cluster's first table (written by the first coordinator that finds none) holds one user,
// security::kDefaultUser ("admin") with the admin role and no password: whoever holds the client
// certificate `shoal certs create-client --user admin` issued administers the cluster and adds
// the others. `shoal local` gives it a password too.
//
// Who knows the table: the leader coordinator installs each table it writes or loads into its
// runtime's Authenticator; a standby reads it from the store on every election poll; a node's
// UserTableFollower asks the coordinator for a newer one every kUserTablePoll (GetUserTable,
// answered to node certificates only). So a removed user or a revoked role is refused by every
// process within kUserTablePoll plus one call to the coordinator (the bound docs/security.md
// states: 5 s).
//
// Thread-safety: the functions are as thread-safe as the store; UserTableFollower is
// thread-safe.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/status.h"
#include "src/metadata/metadata_store.h"
#include "src/net/grpc_runtime.h"
#include "src/security/authenticator.h"
#include "src/security/passwords.h"
#include "src/security/users.h"

namespace shoal::wire {
class AdminRequest;
class AdminResponse;
}  // namespace shoal::wire

namespace shoal::process {

inline constexpr std::string_view kUsersKey = "cluster/users";
inline constexpr std::chrono::milliseconds kUserTablePoll{1000};
// Until a node learned its first table it asks this often (it refuses clients meanwhile).
inline constexpr std::chrono::milliseconds kUserTableFirstPoll{100};

using UserTablePtr = std::shared_ptr<const security::UserTable>;

// The stored table; nullptr if the store holds none yet.
[[nodiscard]] StatusOr<UserTablePtr> ReadUserTable(const metadata::MetadataStore& store);
// The stored table, or the bootstrap table written now if there is none.
[[nodiscard]] StatusOr<UserTablePtr> LoadUserTable(metadata::MetadataStore& store);

// Applies `change` to the stored table by compare-and-set, again on the table another writer
// stored meanwhile; returns the table stored. `change`'s error changes nothing.
using UserTableChange = std::function<StatusOr<security::UserTable>(const security::UserTable&)>;
[[nodiscard]] StatusOr<UserTablePtr> UpdateUserTable(metadata::MetadataStore& store,
                                                     const UserTableChange& change);

// Whether `request` is one of the user administration requests (AddUser ... GetUserTable).
[[nodiscard]] bool IsUserAdmin(const wire::AdminRequest& request);

struct UserAdminOptions {
  // What a password of an add or set-password costs to hash: servers keep the default; the wire
  // fuzz harness lowers it (security::PasswordCost).
  security::PasswordCost password_cost{};
};

// Answers a user administration request from the table in `store`, installing every table it
// reads or writes in `authenticator`. Passwords are hashed here (Argon2id) and never logged or
// answered; ListUsers and every change answer the users without their hashes.
void AnswerUserAdmin(metadata::MetadataStore& store, security::Authenticator& authenticator,
                     const wire::AdminRequest& request, wire::AdminResponse* out,
                     const UserAdminOptions& options = {});

// Where a follower asks for newer tables: the coordinator (GrpcRuntime::Admin), or a test's fake.
using UserTableSource = std::function<StatusOr<wire::AdminResponse>(const wire::AdminRequest&,
                                                                    transport::Micros timeout)>;

// A node's copy of the user table: asks the coordinator for a newer table every kUserTablePoll
// and installs it in the runtime's Authenticator, and is its refresher: a peer about to be
// refused wakes the follower's thread to ask at once, and is not held while it does, however
// slow the coordinator is. Stop before the runtime shuts down.
class UserTableFollower {
 public:
  explicit UserTableFollower(net::GrpcRuntime& runtime);
  UserTableFollower(security::Authenticator& authenticator, UserTableSource source);
  ~UserTableFollower();
  UserTableFollower(const UserTableFollower&) = delete;
  UserTableFollower& operator=(const UserTableFollower&) = delete;

  void Start();
  // Idempotent; joins the thread.
  void Stop();

 private:
  void Run();
  // The refresher: wakes Run.
  void AskRefresh();
  [[nodiscard]] bool Woken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One poll; OK once the coordinator answered (with or without a newer table).
  [[nodiscard]] Status PollOnce(transport::Micros timeout);

  security::Authenticator& authenticator_;
  const UserTableSource source_;
  std::thread thread_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool refresh_asked_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shoal::process
