#include "tests/fuzz/wire_target.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "proto/shoal.pb.h"
#include "src/metadata/embedded_metadata_store.h"
#include "src/net/envelope_dispatch.h"
#include "src/net/grpc_runtime.h"
#include "src/net/wire_codec.h"
#include "src/process/admin.h"
#include "src/process/map_watch_hub.h"
#include "src/process/user_admin.h"
#include "src/security/authenticator.h"
#include "src/security/passwords.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/thread_runtime.h"

namespace shoal::net::fuzz {
namespace {

// The handler's deadline of every envelope. ThreadRuntime runs a handler to its end whatever
// the deadline; what bounds a handler's waits are the cluster's own timeouts (Harness).
constexpr transport::Micros kHandlerTimeout = 50'000;
// The longest a map watch of an input is held (a longer hold, up to kMaxWatchHoldMillis, is cut
// to this; a hold above it is kept, to be refused).
constexpr uint32_t kWatchHoldMillis = 1;
constexpr uint32_t kNodes = 2;
constexpr uint32_t kBuckets = 4;
// Argon2id at its least cost (libsodium's minimum: one pass over 8 KiB), so that an add or a
// set-password costs microseconds; the hash's format, and all the request's handling, are the
// server's.
constexpr security::PasswordCost kFuzzPasswordCost{.passes = 1, .memory_bytes = 8 << 10};
// The user table starts over from the bootstrap table past this many users, so that an input's
// cost does not grow with the inputs before it.
constexpr size_t kMaxUsers = 64;

void Check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz property failed: %s\n", what);
    std::abort();
  }
}

// The embedded cluster every input is handed to. Its timeouts are short, so that a request that
// waits (a write queued behind a fence, a call a node retries) costs milliseconds, not seconds.
// Called from the fuzzing thread only; the cluster's own tasks run beside it.
class Harness {
 public:
  Harness() {
    char dir[] = "/tmp/shoal-fuzz-wire-XXXXXX";
    Check(::mkdtemp(dir) != nullptr, "mkdtemp");
    dir_ = dir;
    server::EmbeddedClusterOptions options;
    options.data_dir = dir_;
    options.initial_nodes = kNodes;
    options.buckets = kBuckets;
    options.coordinator.auto_balance = false;
    options.coordinator.call_timeout = 50'000;
    options.coordinator.call_attempts = 1;
    options.coordinator.retry_backoff = 1'000;
    options.node.fence_timeout = 20'000;
    // As between processes: move files only by FetchMoveFile, never read by a path a request
    // names.
    options.node.move_file_transfer = node::MoveFileTransfer::kFetch;
    cluster_ = std::make_unique<server::EmbeddedCluster>(runtime_, options);
    const Status started = cluster_->Start();
    if (!started.ok()) std::fprintf(stderr, "fuzz_wire: %s\n", started.ToString().c_str());
    Check(started.ok(), "the embedded cluster starts");
    coordinator_ = cluster_->coordinator();
    hub_.Open();
    hub_.Publish(coordinator_->State());
    coordinator_->SetStateObserver(
        [hub = &hub_](const transport::ClusterState& state) { hub->Publish(state); });
    metadata::EmbeddedMetadataOptions users_options;
    users_options.path = dir_ + "/users";
    users_options.sync = false;
    auto users = metadata::EmbeddedMetadataStore::Open(users_options);
    Check(users.ok(), "the users' metadata store opens");
    users_ = std::move(*users);
    authenticator_ = std::make_unique<security::Authenticator>();
  }
  ~Harness() {
    users_.reset();
    hub_.Close();
    (void)cluster_->StopAll();  // deliberately ignored: the directory is removed anyway
    runtime_.Shutdown();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  void Envelope(const wire::Envelope& envelope) {
    wire::Response out;
    const grpc::Status status =
        DispatchEnvelope(runtime_, envelope, kHandlerTimeout, kDefaultMaxMessageBytes, &out);
    if (status.ok()) Check(FromWire(out).ok(), "every answer to an envelope decodes");
  }

  // As the coordinator process answers it: users by process::AnswerUserAdmin, the rest by the
  // coordinator's handler.
  void Admin(const wire::AdminRequest& request) {
    wire::AdminResponse out;
    if (process::IsUserAdmin(request)) {
      UserAdmin(request, &out);
      return;
    }
    process::HandleAdmin(*coordinator_, request, &out);
  }

  // Properties: no answer but GetUserTable's holds a hash; an error never quotes the password;
  // the stored table decodes, keeps its invariants and, once a request is answered without an
  // error, is the one the authenticator has.
  void UserAdmin(const wire::AdminRequest& request, wire::AdminResponse* out) {
    process::AnswerUserAdmin(*users_, *authenticator_, request, out,
                             {.password_cost = kFuzzPasswordCost});
    if (!request.has_get_user_table()) {
      Check(out->SerializeAsString().find("$argon2id$") == std::string::npos,
            "only GetUserTable answers a hash");
    }
    if ((request.has_add_user() || request.has_set_password()) && out->status().code() != 0) {
      // A refused change changed nothing, so the same request with other password bytes (of the
      // same length and validity) must be refused alike: the error never quotes the password.
      wire::AdminRequest other = request;
      std::string* password = request.has_add_user()
                                  ? other.mutable_add_user()->mutable_password()
                                  : other.mutable_set_password()->mutable_password();
      for (char& c : *password) {
        if (c != '\0' && c != '\n' && c != '\r') c = c == 'a' ? 'b' : 'a';
      }
      wire::AdminResponse again;
      process::AnswerUserAdmin(*users_, *authenticator_, other, &again,
                               {.password_cost = kFuzzPasswordCost});
      Check(again.status().message() == out->status().message(),
            "a refused change's error does not depend on the password's bytes");
    }
    auto stored = process::ReadUserTable(*users_);
    Check(stored.ok(), "the stored user table decodes");
    if (*stored == nullptr) return;
    Check((*stored)->CheckInvariants().ok(), "the stored user table keeps its invariants");
    Check(out->status().code() != 0 ? authenticator_->version() <= (*stored)->version()
                                    : authenticator_->version() == (*stored)->version(),
          "an answered request leaves the authenticator the stored user table");
    if ((*stored)->users().size() > kMaxUsers) {
      Check(users_->Delete(process::kUsersKey, metadata::kAnyVersion).ok(),
            "the user table is dropped");
      authenticator_ = std::make_unique<security::Authenticator>();
    }
  }

  void WatchMap(const wire::WatchMapRequest& request) {
    wire::WatchMapResponse out;
    process::AnswerMapWatch(
        hub_, request, [] { return false; }, &out);
  }

 private:
  std::string dir_;
  transport::ThreadRuntime runtime_;
  std::unique_ptr<server::EmbeddedCluster> cluster_;
  std::shared_ptr<coordinator::Coordinator> coordinator_;
  process::MapWatchHub hub_{process::kDefaultMaxMapWatchers};
  // The users, as a coordinator process keeps them beside its cluster.
  std::unique_ptr<metadata::EmbeddedMetadataStore> users_;
  std::unique_ptr<security::Authenticator> authenticator_;
};

Harness& TheHarness() {
  // Destroyed at exit before the libraries' statics it uses (constructed after them).
  static Harness harness;
  return harness;
}

// Admin requests whose work outlives the request are left out: adding a node waits seconds for
// its check-in, removing one, rebalancing and changing the replication start moves that run on
// the coordinator's tasks. The harness's state would stop being a function of its inputs.
bool OutlivesTheRequest(const wire::AdminRequest& request) {
  switch (request.body_case()) {
    case wire::AdminRequest::kAddNode:
    case wire::AdminRequest::kRemoveNode:
    case wire::AdminRequest::kRebalance:
    case wire::AdminRequest::kSetReplication:
      return true;
    case wire::AdminRequest::kPlan:
    case wire::AdminRequest::kProgress:
    case wire::AdminRequest::kSetThresholds:
    case wire::AdminRequest::kForcePrimary:
    case wire::AdminRequest::kSetFailpoints:
    // Users: answered at once from the harness's user table (Harness::UserAdmin).
    case wire::AdminRequest::kAddUser:
    case wire::AdminRequest::kRemoveUser:
    case wire::AdminRequest::kListUsers:
    case wire::AdminRequest::kSetPassword:
    case wire::AdminRequest::kGrantRole:
    case wire::AdminRequest::kGetUserTable:
    case wire::AdminRequest::BODY_NOT_SET:
      return false;
  }
  return true;
}

}  // namespace

int FuzzWire(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // A string field that is not UTF-8 fails the parse, which would log every one.
  const google::protobuf::LogSilencer quiet;
  const auto input = static_cast<WireInput>(data[0] % kWireInputs);
  const uint8_t* body = data + 1;
  const int body_size = static_cast<int>(std::min<size_t>(size - 1, 1 << 20));
  switch (input) {
    case WireInput::kCall: {
      wire::Envelope envelope;
      if (!envelope.ParseFromArray(body, body_size)) return 0;
      TheHarness().Envelope(envelope);
      break;
    }
    case WireInput::kScan: {
      wire::Envelope envelope;
      if (!envelope.ParseFromArray(body, body_size) || !envelope.request().has_scan()) return 0;
      TheHarness().Envelope(envelope);
      break;
    }
    case WireInput::kPipeCall: {
      wire::PipeCall call;
      if (!call.ParseFromArray(body, body_size)) return 0;
      TheHarness().Envelope(call.envelope());
      break;
    }
    case WireInput::kAdmin: {
      wire::AdminRequest request;
      if (!request.ParseFromArray(body, body_size) || OutlivesTheRequest(request)) return 0;
      TheHarness().Admin(request);
      break;
    }
    case WireInput::kWatchMap: {
      wire::WatchMapRequest request;
      if (!request.ParseFromArray(body, body_size)) return 0;
      if (request.hold_millis() <= kMaxWatchHoldMillis) {
        request.set_hold_millis(std::min(request.hold_millis(), kWatchHoldMillis));
      }
      TheHarness().WatchMap(request);
      break;
    }
    case WireInput::kResolve: {
      wire::ResolveRequest request;
      (void)request.ParseFromArray(body, body_size);  // no fields: the parse is the test
      break;
    }
  }
  return 0;
}

}  // namespace shoal::net::fuzz
