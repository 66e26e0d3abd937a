// The seed corpus of the wire fuzz target: valid requests of every WireInput, addressed to the
// harness's processes (nodes 1 and 2, the coordinator), at its first map epoch.

#include <string>
#include <utility>
#include <vector>

#include "proto/shoal.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/net/wire_codec.h"
#include "tests/fuzz/wire_target.h"

namespace shoal::net::fuzz {
namespace {

using transport::Address;

constexpr MapEpoch kEpoch(1);
constexpr CollectionId kCollection(1);

std::string Encoded(WireInput input, const google::protobuf::Message& message) {
  return std::string(1, static_cast<char>(input)) + message.SerializeAsString();
}

wire::Envelope EnvelopeOf(const Address& from, const Address& to, const transport::Request& r) {
  wire::Envelope envelope;
  ToWire(from, envelope.mutable_from());
  ToWire(to, envelope.mutable_to());
  ToWire(r, envelope.mutable_request());
  return envelope;
}

}  // namespace

std::vector<WireSeed> WireSeeds() {
  const Address client = Address::Client(0);
  const Address coordinator = Address::Coordinator();
  const Address n1 = Address::Node(NodeId(1));
  const Address n2 = Address::Node(NodeId(2));
  const transport::WriteRequest put{.epoch = kEpoch,
                                    .op = transport::WriteOp::kUpsert,
                                    .collection = kCollection,
                                    .primary_key = "k1",
                                    .body = R"({"a":1,"b":[1,2,{"c":"x"}]})"};
  const transport::GetRequest get{.epoch = kEpoch, .collection = kCollection, .primary_key = "k1"};
  const transport::ScanRequest scan{.epoch = kEpoch,
                                    .bucket = BucketId(0),
                                    .range = storage::PointRange::All(),
                                    .collection = kCollection,
                                    .max_documents = 10};
  std::vector<std::pair<std::string, wire::Envelope>> calls = {
      {"create-collection",
       EnvelopeOf(client, coordinator, transport::CreateCollectionRequest{.name = "docs"})},
      {"get-map", EnvelopeOf(client, coordinator, transport::GetMapRequest{})},
      {"put", EnvelopeOf(client, n1, put)},
      {"get", EnvelopeOf(client, n2, get)},
      {"batch-write",
       EnvelopeOf(client, n1, transport::BatchWriteRequest{.epoch = kEpoch, .writes = {put, put}})},
      {"batch-get",
       EnvelopeOf(client, n2, transport::BatchGetRequest{.epoch = kEpoch, .gets = {get, get}})},
      {"heartbeat", EnvelopeOf(n1, coordinator,
                               transport::HeartbeatRequest{.node = NodeId(1), .epoch = kEpoch})},
      {"bucket-load", EnvelopeOf(coordinator, n1, transport::BucketLoadRequest{})},
      {"install-map", EnvelopeOf(coordinator, n2, transport::InstallMapRequest{})},
      {"fence", EnvelopeOf(coordinator, n1,
                           transport::FenceRequest{.move = MoveId(1), .bucket = BucketId(0)})},
      {"read-changes",
       EnvelopeOf(n2, n1, transport::ReadChangesRequest{.move = MoveId(1), .bucket = BucketId(0)})},
      {"quiesce", EnvelopeOf(coordinator, n1,
                             transport::QuiesceRequest{
                                 .epoch = kEpoch, .buckets = {BucketId(1)}, .token = 7})},
  };
  std::vector<WireSeed> seeds;
  for (const auto& [name, envelope] : calls) {
    seeds.push_back({"call-" + name, Encoded(WireInput::kCall, envelope)});
  }
  seeds.push_back({"scan", Encoded(WireInput::kScan, EnvelopeOf(client, n1, scan))});
  wire::PipeCall pipe;
  pipe.set_id(1);
  *pipe.mutable_envelope() = EnvelopeOf(client, n1, put);
  pipe.set_timeout_micros(1'000);
  seeds.push_back({"pipe-put", Encoded(WireInput::kPipeCall, pipe)});
  *pipe.mutable_envelope() = EnvelopeOf(client, n2, get);
  seeds.push_back({"pipe-get", Encoded(WireInput::kPipeCall, pipe)});

  wire::AdminRequest admin;
  admin.mutable_progress();
  seeds.push_back({"admin-progress", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_plan()->set_remove(2);
  seeds.push_back({"admin-plan", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_set_thresholds()->set_split_bytes(1 << 20);
  seeds.push_back({"admin-thresholds", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_force_primary()->set_bucket(0);
  admin.mutable_force_primary()->set_node(2);
  seeds.push_back({"admin-force-primary", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_set_failpoints()->set_spec("source.after_fence=pause:1");
  seeds.push_back({"admin-failpoints", Encoded(WireInput::kAdmin, admin)});
  auto* add = admin.mutable_add_user();
  add->set_name("alice");
  add->set_role("write");
  add->set_password("alice-password-1");
  seeds.push_back({"admin-user-add", Encoded(WireInput::kAdmin, admin)});
  add = admin.mutable_add_user();
  add->set_name("bob.cert-only");
  add->set_role("read");
  seeds.push_back({"admin-user-add-certificate", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_set_password()->set_name("alice");
  admin.mutable_set_password()->set_password("alice-password-2");
  seeds.push_back({"admin-user-set-password", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_grant_role()->set_name("bob.cert-only");
  admin.mutable_grant_role()->set_role("admin");
  seeds.push_back({"admin-user-grant", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_list_users();
  seeds.push_back({"admin-user-list", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_get_user_table()->set_known_version(1);
  seeds.push_back({"admin-user-table", Encoded(WireInput::kAdmin, admin)});
  admin.mutable_remove_user()->set_name("alice");
  seeds.push_back({"admin-user-remove", Encoded(WireInput::kAdmin, admin)});

  wire::WatchMapRequest watch;
  seeds.push_back({"watch-map", Encoded(WireInput::kWatchMap, watch)});
  watch.set_known_epoch(kEpoch.value());
  watch.set_hold_millis(1);
  watch.set_structured(true);
  seeds.push_back({"watch-map-structured", Encoded(WireInput::kWatchMap, watch)});
  watch.set_hold_millis(kMaxWatchHoldMillis + 1);
  seeds.push_back({"watch-map-too-long", Encoded(WireInput::kWatchMap, watch)});

  seeds.push_back({"resolve", Encoded(WireInput::kResolve, wire::ResolveRequest())});
  return seeds;
}

}  // namespace shoal::net::fuzz
