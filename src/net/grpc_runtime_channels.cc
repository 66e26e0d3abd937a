// GrpcRuntime's channels to other processes (grpc_runtime.h): one per host:port with its
// reconnect settings, and the address of a process, from the address book or, when it holds
// none, from the coordinator's.

#include <absl/synchronization/mutex.h>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <string>

#include "proto/shoal.grpc.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/net/grpc_runtime_internal.h"
#include "src/net/grpc_status.h"
#include "src/net/wire_codec.h"

namespace shoal::net {

using transport::Address;

namespace {

// Reconnect quickly to a process that restarts: gRPC's default backoff (1 s growing to 120 s)
// would keep failing calls long after the peer is back. A call that finds its channel unable to
// connect also resets the backoff (ReconnectSoon), so the caller's own retries pace reconnects.
constexpr int kReconnectBackoffMs = 100;
constexpr int kMaxReconnectBackoffMs = 1000;
// gRPC's GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is the shortest time a connection attempt may take
// (TCP and HTTP/2 handshake), not a backoff. At 100 ms, attempts to a process that is starting
// on a loaded machine are cut off ("tcp handshaker shutdown") again and again.
constexpr int kMinConnectTimeoutMs = 2000;

}  // namespace

std::shared_ptr<GrpcRuntime::Peer> GrpcRuntime::PeerFor(const std::string& host_port) {
  absl::MutexLock lock(&mu_);
  return PeerForLocked(host_port);
}

StatusOr<std::shared_ptr<GrpcRuntime::Peer>> GrpcRuntime::PeerOf(const Address& to) {
  {
    // The common case, once per call: one lock, no copy of the address.
    absl::MutexLock lock(&mu_);
    if (auto it = book_.find(to); it != book_.end()) return PeerForLocked(it->second);
  }
  SHOAL_ASSIGN_OR_RETURN(std::string host_port, Resolve(to));
  return PeerFor(host_port);
}

std::shared_ptr<GrpcRuntime::Peer> GrpcRuntime::PeerForLocked(const std::string& host_port) {
  auto& peer = peers_[host_port];
  if (peer == nullptr) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(GrpcMessageLimit());
    args.SetMaxSendMessageSize(GrpcMessageLimit());
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinConnectTimeoutMs);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
    if (!options_.share_connections) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    credentials_->ConfigureChannel(host_port, args);
    peer = std::make_shared<Peer>();
    peer->host_port = host_port;
    peer->channel = grpc::CreateCustomChannel(host_port, credentials_->Channel(), args);
    peer->stub = wire::Shoal::NewStub(peer->channel);
  }
  return peer;
}

Status GrpcRuntime::FetchAddressBook() {
  Status status;
  for (size_t attempt = 0; attempt < std::max<size_t>(1, coordinators_.size()); ++attempt) {
    std::string coordinator;
    {
      absl::MutexLock lock(&mu_);
      auto it = book_.find(Address::Coordinator());
      if (it == book_.end()) return UnavailableError("no coordinator address");
      coordinator = it->second;
    }
    status = FetchAddressBookFrom(coordinator);
    if (status.ok()) return status;
    NextCoordinator(coordinator);
  }
  return status;
}

Status GrpcRuntime::FetchAddressBookFrom(const std::string& coordinator) {
  auto peer = PeerFor(coordinator);
  grpc::ClientContext context;
  PrepareCall(*credentials_, &context, DeadlineAfter(kResolveTimeout));
  wire::ResolveRequest request;
  wire::ResolveResponse response;
  const grpc::Status status =
      CheckServer(*credentials_, context, peer->stub->Resolve(&context, request, &response));
  if (!status.ok()) {
    ReconnectSoon(coordinator, status);
    return UnavailableError(
        fmt::format("address book from {}: {}", coordinator, status.error_message()));
  }
  for (const auto& entry : response.entries()) {
    auto who = FromWire(entry.address());
    // The coordinator's own entry is what this process was configured with: keep that.
    if (!who.ok() || who->kind == Address::Kind::kCoordinator) continue;
    SetAddress(*who, entry.host_port());
  }
  return OkStatus();
}

void GrpcRuntime::ReconnectSoon(const std::string& host_port, const grpc::Status& status) {
  if (!NeverConnected(status)) return;
  std::shared_ptr<Peer> peer;
  {
    absl::MutexLock lock(&mu_);
    auto it = peers_.find(host_port);
    if (it == peers_.end()) return;
    peer = it->second;
  }
  grpc::experimental::ChannelResetConnectionBackoff(peer->channel.get());
}

StatusOr<std::string> GrpcRuntime::Resolve(const Address& to) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = book_.find(to); it != book_.end()) return it->second;
  }
  if (!options_.coordinator.empty()) SHOAL_RETURN_IF_ERROR(FetchAddressBook());
  absl::MutexLock lock(&mu_);
  if (auto it = book_.find(to); it != book_.end()) return it->second;
  return UnavailableError(fmt::format("no known address for {}", to.DebugString()));
}

}  // namespace shoal::net
