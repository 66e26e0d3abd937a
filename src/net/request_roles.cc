#include "src/net/request_roles.h"

#include <google/protobuf/descriptor.h>

#include "proto/shoal.pb.h"

namespace shoal::net {
namespace {

using security::Role;

// The oneof field's name: the body case is its field number.
template <typename Message>
std::string_view BodyName(const Message& message, int body_case, std::string_view none) {
  const google::protobuf::FieldDescriptor* field =
      message.GetDescriptor()->FindFieldByNumber(body_case);
  return field == nullptr ? none : std::string_view(field->name());
}

}  // namespace

RequestAccess AccessOf(const wire::Request& request) {
  switch (request.body_case()) {
    case wire::Request::kGet:
    case wire::Request::kBatchGet:
    case wire::Request::kScan:
    case wire::Request::kGetMap:
    case wire::Request::kBucketLoad:  // the nodes' load, for `shoal status`
    // Not a request; decoding refuses it with INVALID_ARGUMENT, not a role.
    case wire::Request::BODY_NOT_SET:
      return {.role = Role::kRead};
    case wire::Request::kWrite:  // put, insert, delete, hot-spot Apply
    case wire::Request::kBatchWrite:
    case wire::Request::kCreateCollection:
      return {.role = Role::kWrite};
    case wire::Request::kInstallMap:
    case wire::Request::kHeartbeat:
    case wire::Request::kExportBucket:
    case wire::Request::kIngestBucket:
    case wire::Request::kCatchUp:
    case wire::Request::kReadChanges:
    case wire::Request::kFence:
    case wire::Request::kDropBucket:
    case wire::Request::kTransferBucket:
    case wire::Request::kFetchMoveFile:
    case wire::Request::kReplicate:
    case wire::Request::kReplicaReport:
    case wire::Request::kSealTerm:
    case wire::Request::kQuiesce:
    case wire::Request::kResumeCopy:
    case wire::Request::kRetainedLog:
      return {.role = Role::kAdmin, .cluster_only = true};
  }
  return {.role = Role::kAdmin, .cluster_only = true};
}

RequestAccess AccessOf(const wire::AdminRequest& request) {
  switch (request.body_case()) {
    case wire::AdminRequest::kProgress:  // `shoal status`
    case wire::AdminRequest::kPlan:      // what the balancer would do; changes nothing
    case wire::AdminRequest::BODY_NOT_SET:
      return {.role = Role::kRead};
    case wire::AdminRequest::kAddNode:
    case wire::AdminRequest::kRemoveNode:
    case wire::AdminRequest::kRebalance:
    case wire::AdminRequest::kSetThresholds:
    case wire::AdminRequest::kSetReplication:
    case wire::AdminRequest::kForcePrimary:
    case wire::AdminRequest::kSetFailpoints:
    case wire::AdminRequest::kAddUser:
    case wire::AdminRequest::kRemoveUser:
    case wire::AdminRequest::kListUsers:
    case wire::AdminRequest::kSetPassword:
    case wire::AdminRequest::kGrantRole:
      return {.role = Role::kAdmin};
    case wire::AdminRequest::kGetUserTable:  // the table with its hashes: for serving processes
      return {.role = Role::kAdmin, .cluster_only = true};
  }
  return {.role = Role::kAdmin, .cluster_only = true};
}

std::string_view NameOf(const wire::Request& request) {
  return BodyName(request, request.body_case(), "an empty request");
}

std::string_view NameOf(const wire::AdminRequest& request) {
  return BodyName(request, request.body_case(), "an empty admin request");
}

}  // namespace shoal::net
