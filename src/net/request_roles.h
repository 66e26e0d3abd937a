#pragma once

// The one table of which request needs which right (docs/security.md, "Roles"): every case of
// the wire Request oneof (what Shoal.Call, Shoal.Scan and Shoal.Pipe carry) and of the
// AdminRequest oneof (Shoal.Admin) is named in an exhaustive switch, so a request type added to
// proto/shoal.proto does not compile until it is given its role here.
//
// Requests only cluster processes send (map installs, heartbeats, every step of a bucket move,
// replication) are marked cluster_only: they need a node certificate whatever the user's role
// (CheckClusterSender). Shoal.Resolve and Shoal.WatchMap carry no request: they need kRead.
//
// Thread-safety: pure functions.

#include <string_view>

#include "src/security/users.h"

namespace shoal::wire {
class AdminRequest;
class Request;
}  // namespace shoal::wire

namespace shoal::net {

struct RequestAccess {
  security::Role role = security::Role::kAdmin;
  bool cluster_only = false;  // only with a node certificate
};

[[nodiscard]] RequestAccess AccessOf(const wire::Request& request);
[[nodiscard]] RequestAccess AccessOf(const wire::AdminRequest& request);

// The request's name for error messages ("write", "admin add_node").
[[nodiscard]] std::string_view NameOf(const wire::Request& request);
[[nodiscard]] std::string_view NameOf(const wire::AdminRequest& request);

}  // namespace shoal::net
