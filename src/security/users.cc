#include "src/security/users.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "src/security/certificates.h"
#include "src/security/passwords.h"

namespace shoal::security {
namespace {

Status CheckUser(const User& user) {
  SHOAL_RETURN_IF_ERROR(CheckUserName(user.name));
  if (!user.password_hash.empty()) {
    SHOAL_RETURN_IF_ERROR(Prefixed(CheckPasswordHash(user.password_hash), user.name));
  }
  return OkStatus();
}

Status NoSuchUser(std::string_view name) {
  return NotFoundError(fmt::format("no user '{}'", name));
}

// Refuses a change that leaves no admin where `name` was the last one: nobody could administer
// the cluster again (a node certificate has every right, but no command presents one).
Status KeepsAnAdmin(const UserTable& table, std::string_view name, std::string_view change) {
  const User* user = table.Find(name);
  if (user == nullptr || user->role != Role::kAdmin) return OkStatus();
  for (const auto& [other, entry] : table.users()) {
    if (other != name && entry.role == Role::kAdmin) return OkStatus();
  }
  return FailedPreconditionError(fmt::format(
      "cannot {} '{}': the cluster's last admin; give another user the role admin first (shoal "
      "user grant NAME --role admin)",
      change, name));
}

}  // namespace

std::string_view ToString(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kWrite:
      return "write";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

StatusOr<Role> ParseRole(std::string_view text) {
  for (Role role : {Role::kRead, Role::kWrite, Role::kAdmin}) {
    if (text == ToString(role)) return role;
  }
  return InvalidArgumentError(fmt::format("role '{}': one of read, write, admin", text));
}

bool Allows(Role held, Role needed) {
  return static_cast<uint8_t>(held) >= static_cast<uint8_t>(needed);
}

const User* UserTable::Find(std::string_view name) const {
  auto it = users_.find(name);
  return it == users_.end() ? nullptr : &it->second;
}

StatusOr<UserTable> UserTable::Add(User user) const {
  SHOAL_RETURN_IF_ERROR(CheckUser(user));
  if (Find(user.name) != nullptr) {
    return AlreadyExistsError(fmt::format("user '{}' exists", user.name));
  }
  if (users_.size() >= kMaxUsers) {
    return ResourceExhaustedError(fmt::format(
        "the cluster has {} users; the limit is {} (docs/limits.md)", users_.size(), kMaxUsers));
  }
  UserTable next = *this;
  ++next.version_;
  std::string name = user.name;
  next.users_.emplace(std::move(name), std::move(user));
  return next;
}

StatusOr<UserTable> UserTable::Remove(std::string_view name) const {
  if (Find(name) == nullptr) return NoSuchUser(name);
  SHOAL_RETURN_IF_ERROR(KeepsAnAdmin(*this, name, "remove"));
  UserTable next = *this;
  ++next.version_;
  next.users_.erase(next.users_.find(name));
  return next;
}

StatusOr<UserTable> UserTable::SetPasswordHash(std::string_view name, std::string hash) const {
  if (Find(name) == nullptr) return NoSuchUser(name);
  if (!hash.empty()) SHOAL_RETURN_IF_ERROR(CheckPasswordHash(hash));
  UserTable next = *this;
  ++next.version_;
  next.users_.find(name)->second.password_hash = std::move(hash);
  return next;
}

StatusOr<UserTable> UserTable::Grant(std::string_view name, Role role) const {
  if (Find(name) == nullptr) return NoSuchUser(name);
  if (role != Role::kAdmin) {
    SHOAL_RETURN_IF_ERROR(KeepsAnAdmin(*this, name, "take the role admin from"));
  }
  UserTable next = *this;
  ++next.version_;
  next.users_.find(name)->second.role = role;
  return next;
}

Status UserTable::CheckInvariants() const {
  for (const auto& [name, user] : users_) {
    if (name != user.name) {
      return InternalError(fmt::format("user table: key '{}' holds user '{}'", name, user.name));
    }
    SHOAL_RETURN_IF_ERROR(Prefixed(CheckUser(user), "user table"));
  }
  return OkStatus();
}

std::string UserTable::Encode() const {
  nlohmann::json users = nlohmann::json::array();
  for (const auto& [name, user] : users_) {
    users.push_back({{"name", user.name},
                     {"role", std::string(ToString(user.role))},
                     {"password_hash", user.password_hash}});
  }
  return nlohmann::json{{"version", version_}, {"users", std::move(users)}}.dump();
}

StatusOr<UserTable> UserTable::Decode(std::string_view json) {
  auto bad = [](std::string_view what) {
    return InvalidArgumentError(fmt::format("user table: {}", what));
  };
  nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return bad("not a JSON object");
  if (!root.contains("version") || !root["version"].is_number_unsigned()) {
    return bad("\"version\" must be an unsigned integer");
  }
  if (!root.contains("users") || !root["users"].is_array())
    return bad("\"users\" must be an array");
  UserTable table;
  table.version_ = root["version"].get<uint64_t>();
  for (const nlohmann::json& entry : root["users"]) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("role") || !entry["role"].is_string() || !entry.contains("password_hash") ||
        !entry["password_hash"].is_string()) {
      return bad("each user needs string fields \"name\", \"role\" and \"password_hash\"");
    }
    User user{.name = entry["name"].get<std::string>(),
              .password_hash = entry["password_hash"].get<std::string>()};
    SHOAL_ASSIGN_OR_RETURN(user.role, ParseRole(entry["role"].get<std::string>()));
    SHOAL_RETURN_IF_ERROR(Prefixed(CheckUser(user), "user table"));
    std::string name = user.name;
    if (!table.users_.emplace(std::move(name), std::move(user)).second) {
      return bad(fmt::format("user '{}' appears twice", entry["name"].get<std::string>()));
    }
  }
  return table;
}

std::string UserTable::DebugString() const {
  std::string out = fmt::format("v{} [", version_);
  bool first = true;
  for (const auto& [name, user] : users_) {
    out += fmt::format("{}{}:{}({})", first ? "" : " ", name, ToString(user.role),
                       user.password_hash.empty() ? "certificate" : "password");
    first = false;
  }
  out += "]";
  return out;
}

}  // namespace shoal::security
