#include "src/process/user_admin.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "proto/shoal.pb.h"
#include "src/common/log.h"
#include "src/net/wire_codec.h"
#include "src/security/credentials_file.h"
#include "src/security/passwords.h"

namespace shoal::process {
namespace {

using security::Role;
using security::User;
using security::UserTable;

// Compare-and-set attempts before giving up on a table that keeps changing under us.
constexpr int kMaxUpdateAttempts = 20;
constexpr transport::Micros kPollTimeout = 2'000'000;
// A refresh asked by a call about to be refused: the calls refused meanwhile are told to retry,
// so keep it short.
constexpr transport::Micros kRefreshTimeout = 500'000;

StatusOr<UserTable> Bootstrap() {
  return UserTable().Add(User{.name = std::string(security::kDefaultUser), .role = Role::kAdmin});
}

// The hash of a password given in a request; "" stays "" (certificate only).
StatusOr<std::string> HashOf(const std::string& password, security::PasswordCost cost) {
  if (password.empty()) return std::string();
  return security::HashPassword(password, cost);
}

void FillUsers(const UserTable& table, wire::AdminResponse* out) {
  out->clear_users();
  for (const auto& [name, user] : table.users()) {
    wire::UserInfo* info = out->add_users();
    info->set_name(name);
    info->set_role(std::string(security::ToString(user.role)));
    info->set_has_password(!user.password_hash.empty());
  }
  out->set_users_version(table.version());
}

// The change a user change request asks for; kInvalidArgument for a bad role or password.
StatusOr<UserTableChange> ChangeOf(const wire::AdminRequest& request, security::PasswordCost cost) {
  if (request.has_add_user()) {
    const auto& add = request.add_user();
    SHOAL_ASSIGN_OR_RETURN(Role role, security::ParseRole(add.role()));
    SHOAL_ASSIGN_OR_RETURN(std::string hash, HashOf(add.password(), cost));
    return UserTableChange([name = add.name(), role, hash](const UserTable& table) {
      return table.Add(User{.name = name, .role = role, .password_hash = hash});
    });
  }
  if (request.has_remove_user()) {
    return UserTableChange([name = request.remove_user().name()](const UserTable& table) {
      return table.Remove(name);
    });
  }
  if (request.has_set_password()) {
    SHOAL_ASSIGN_OR_RETURN(std::string hash, HashOf(request.set_password().password(), cost));
    return UserTableChange([name = request.set_password().name(), hash](const UserTable& table) {
      return table.SetPasswordHash(name, hash);
    });
  }
  if (request.has_grant_role()) {
    SHOAL_ASSIGN_OR_RETURN(Role role, security::ParseRole(request.grant_role().role()));
    return UserTableChange([name = request.grant_role().name(), role](const UserTable& table) {
      return table.Grant(name, role);
    });
  }
  return InternalError("not a user change");
}

// What the event log says of a change: never a password or a hash.
std::string Describe(const wire::AdminRequest& request) {
  if (request.has_add_user()) {
    return fmt::format("add {} ({})", request.add_user().name(), request.add_user().role());
  }
  if (request.has_remove_user()) return fmt::format("remove {}", request.remove_user().name());
  if (request.has_set_password()) {
    return fmt::format("set-password {}", request.set_password().name());
  }
  if (request.has_grant_role()) {
    return fmt::format("grant {} {}", request.grant_role().name(), request.grant_role().role());
  }
  return "";
}

}  // namespace

StatusOr<UserTablePtr> ReadUserTable(const metadata::MetadataStore& store) {
  auto stored = store.Get(kUsersKey);
  if (!stored.ok()) {
    if (stored.status().code() == StatusCode::kNotFound) return UserTablePtr();
    return stored.status();
  }
  SHOAL_ASSIGN_OR_RETURN(UserTable table, UserTable::Decode(stored->value));
  return std::make_shared<const UserTable>(std::move(table));
}

StatusOr<UserTablePtr> LoadUserTable(metadata::MetadataStore& store) {
  SHOAL_ASSIGN_OR_RETURN(UserTablePtr table, ReadUserTable(store));
  if (table != nullptr) return table;
  SHOAL_ASSIGN_OR_RETURN(UserTable first, Bootstrap());
  auto put = store.Put(kUsersKey, first.Encode(), metadata::kMustNotExist);
  if (!put.ok()) {
    // Another coordinator wrote the first table meanwhile: use it.
    if (put.status().code() != StatusCode::kFailedPrecondition) return put.status();
    SHOAL_ASSIGN_OR_RETURN(table, ReadUserTable(store));
    if (table == nullptr) return put.status();
    return table;
  }
  log::Info("users.bootstrap", {{"user", std::string(security::kDefaultUser)}});
  return std::make_shared<const UserTable>(std::move(first));
}

StatusOr<UserTablePtr> UpdateUserTable(metadata::MetadataStore& store,
                                       const UserTableChange& change) {
  for (int attempt = 0; attempt < kMaxUpdateAttempts; ++attempt) {
    SHOAL_RETURN_IF_ERROR(LoadUserTable(store).status());
    SHOAL_ASSIGN_OR_RETURN(metadata::Versioned stored, store.Get(kUsersKey));
    SHOAL_ASSIGN_OR_RETURN(UserTable current, UserTable::Decode(stored.value));
    SHOAL_ASSIGN_OR_RETURN(UserTable next, change(current));
    SHOAL_RETURN_IF_ERROR(next.CheckInvariants());
    auto put = store.Put(kUsersKey, next.Encode(), stored.version);
    if (put.ok()) return std::make_shared<const UserTable>(std::move(next));
    if (put.status().code() != StatusCode::kFailedPrecondition) return put.status();
  }
  return AbortedError("the user table kept changing; try again");
}

bool IsUserAdmin(const wire::AdminRequest& request) {
  return request.has_add_user() || request.has_remove_user() || request.has_list_users() ||
         request.has_set_password() || request.has_grant_role() || request.has_get_user_table();
}

void AnswerUserAdmin(metadata::MetadataStore& store, security::Authenticator& authenticator,
                     const wire::AdminRequest& request, wire::AdminResponse* out,
                     const UserAdminOptions& options) {
  const auto answer = [&](const StatusOr<UserTablePtr>& table) {
    if (!table.ok()) {
      net::ToWire(table.status(), out->mutable_status());
      return;
    }
    (void)authenticator.Install(*table);  // false: it knew this version already
    FillUsers(**table, out);
  };
  if (request.has_list_users()) {
    answer(LoadUserTable(store));
    return;
  }
  if (request.has_get_user_table()) {
    auto table = LoadUserTable(store);
    answer(table);
    if (table.ok() && (*table)->version() > request.get_user_table().known_version()) {
      out->set_user_table((*table)->Encode());
    }
    return;
  }
  auto change = ChangeOf(request, options.password_cost);
  if (!change.ok()) {
    net::ToWire(change.status(), out->mutable_status());
    return;
  }
  auto table = UpdateUserTable(store, *change);
  answer(table);
  if (table.ok()) {
    log::Info("users.changed",
              {{"change", Describe(request)}, {"users_version", (*table)->version()}});
  }
}

UserTableFollower::UserTableFollower(net::GrpcRuntime& runtime)
    : UserTableFollower(runtime.authenticator(),
                        [&runtime](const wire::AdminRequest& request, transport::Micros timeout) {
                          return runtime.Admin(request, timeout);
                        }) {}

UserTableFollower::UserTableFollower(security::Authenticator& authenticator, UserTableSource source)
    : authenticator_(authenticator), source_(std::move(source)) {}

UserTableFollower::~UserTableFollower() { Stop(); }

void UserTableFollower::Start() {
  // The follower outlives every call: Stop comes before the runtime's shutdown.
  authenticator_.SetRefresher([this] { AskRefresh(); });
  thread_ = std::thread([this] { Run(); });
}

void UserTableFollower::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool UserTableFollower::Woken() const { return stopping_ || refresh_asked_; }

void UserTableFollower::AskRefresh() {
  absl::MutexLock lock(&mu_);
  refresh_asked_ = true;
}

Status UserTableFollower::PollOnce(transport::Micros timeout) {
  wire::AdminRequest request;
  request.mutable_get_user_table()->set_known_version(authenticator_.version());
  SHOAL_ASSIGN_OR_RETURN(wire::AdminResponse response, source_(request, timeout));
  if (response.user_table().empty()) return OkStatus();
  SHOAL_ASSIGN_OR_RETURN(UserTable table, UserTable::Decode(response.user_table()));
  const uint64_t version = table.version();
  if (authenticator_.Install(std::make_shared<const UserTable>(std::move(table)))) {
    log::Info("users.learned", {{"users_version", version}});
  }
  return OkStatus();
}

void UserTableFollower::Run() {
  bool asked = false;
  while (true) {
    // A failed poll (the coordinator away: a failover, a restart) keeps the table this node has.
    (void)PollOnce(asked ? kRefreshTimeout : kPollTimeout);
    if (asked) authenticator_.RefreshDone();
    const std::chrono::milliseconds period =
        authenticator_.version() > 0 ? kUserTablePoll : kUserTableFirstPoll;
    absl::MutexLock lock(&mu_);
    (void)mu_.AwaitWithTimeout(absl::Condition(this, &UserTableFollower::Woken),
                               absl::FromChrono(period));
    if (stopping_) return;
    asked = refresh_asked_;
    refresh_asked_ = false;
  }
}

}  // namespace shoal::process
