#include "src/net/request_roles.h"

#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include "proto/shoal.pb.h"

namespace shoal::net {
namespace {

using security::Role;

wire::Request RequestOfCase(int field_number) {
  wire::Request request;
  const auto* field = wire::Request::descriptor()->FindFieldByNumber(field_number);
  request.GetReflection()->MutableMessage(&request, field);
  return request;
}

TEST(RequestRolesTest, DataRequestsNeedReadOrWrite) {
  wire::Request request;
  request.mutable_get();
  EXPECT_EQ(AccessOf(request).role, Role::kRead);
  EXPECT_FALSE(AccessOf(request).cluster_only);
  request.mutable_scan();
  EXPECT_EQ(AccessOf(request).role, Role::kRead);
  request.mutable_batch_get();
  EXPECT_EQ(AccessOf(request).role, Role::kRead);
  request.mutable_get_map();
  EXPECT_EQ(AccessOf(request).role, Role::kRead);
  request.mutable_write();
  EXPECT_EQ(AccessOf(request).role, Role::kWrite);
  EXPECT_EQ(NameOf(request), "write");
  request.mutable_batch_write();
  EXPECT_EQ(AccessOf(request).role, Role::kWrite);
  request.mutable_create_collection();
  EXPECT_EQ(AccessOf(request).role, Role::kWrite);
}

TEST(RequestRolesTest, ClusterMessagesNeedANodeCertificate) {
  wire::Request request;
  request.mutable_install_map();
  EXPECT_TRUE(AccessOf(request).cluster_only);
  request.mutable_replicate();
  EXPECT_TRUE(AccessOf(request).cluster_only);
  request.mutable_resume_copy();
  EXPECT_TRUE(AccessOf(request).cluster_only);
  request.mutable_retained_log();
  EXPECT_TRUE(AccessOf(request).cluster_only);
  EXPECT_EQ(NameOf(request), "retained_log");
}

// Every case of the oneof has an entry: a cluster-only request needs admin, and every other is
// readable or writable by a user (the table in docs/security.md).
TEST(RequestRolesTest, EveryRequestCaseHasAnAccess) {
  const auto* oneof = wire::Request::descriptor()->FindOneofByName("body");
  ASSERT_NE(oneof, nullptr);
  int cluster_only = 0;
  for (int i = 0; i < oneof->field_count(); ++i) {
    const wire::Request request = RequestOfCase(oneof->field(i)->number());
    const RequestAccess access = AccessOf(request);
    EXPECT_EQ(NameOf(request), oneof->field(i)->name());
    if (access.cluster_only) {
      ++cluster_only;
      EXPECT_EQ(access.role, Role::kAdmin) << oneof->field(i)->name();
    }
  }
  EXPECT_EQ(cluster_only, 16);
}

TEST(RequestRolesTest, AdminRequestsNeedAdminButStatusReads) {
  wire::AdminRequest request;
  request.mutable_progress();
  EXPECT_EQ(AccessOf(request).role, Role::kRead);
  request.mutable_plan();
  EXPECT_EQ(AccessOf(request).role, Role::kRead);
  request.mutable_add_node();
  EXPECT_EQ(AccessOf(request).role, Role::kAdmin);
  EXPECT_EQ(NameOf(request), "add_node");
  request.mutable_set_failpoints();
  EXPECT_EQ(AccessOf(request).role, Role::kAdmin);
  request.mutable_set_thresholds();
  EXPECT_EQ(AccessOf(request).role, Role::kAdmin);
  request.mutable_add_user();
  EXPECT_EQ(AccessOf(request).role, Role::kAdmin);
  request.mutable_list_users();
  EXPECT_EQ(AccessOf(request).role, Role::kAdmin);
  EXPECT_FALSE(AccessOf(request).cluster_only);
  request.mutable_get_user_table();
  EXPECT_TRUE(AccessOf(request).cluster_only);
}

}  // namespace
}  // namespace shoal::net
