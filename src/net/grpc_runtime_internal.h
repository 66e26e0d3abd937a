#pragma once

// Pieces of GrpcRuntime shared by its source files (grpc_runtime.cc, grpc_runtime_channels.cc,
// grpc_runtime_coordinator.cc, grpc_scan_stream.cc); not part of its interface. Stateless;
// thread-safe.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "proto/shoal.grpc.pb.h"
#include "src/common/status.h"
#include "src/net/grpc_runtime.h"
#include "src/net/grpc_status.h"

namespace shoal::net {

// The timeout a handler gets when its caller set no deadline.
inline constexpr transport::Micros kNoDeadline = transport::Micros{3600} * 1'000'000;

// How long a call asking a coordinator for addresses waits, and a map watch's allowance for the
// network on top of its hold.
inline constexpr transport::Micros kResolveTimeout = 1'000'000;

// One channel per host:port, shared by every call to it (gRPC channels are thread-safe and
// multiplex calls over one connection).
struct GrpcRuntime::Peer {
  std::string host_port;  // for error messages
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<wire::Shoal::Stub> stub;
};

[[nodiscard]] std::chrono::system_clock::time_point DeadlineAfter(transport::Micros timeout);
// What every call this runtime makes needs before it starts: its deadline, and the login of a
// client that signs in by password (TlsCredentials::AddLogin).
void PrepareCall(const TlsCredentials& credentials, grpc::ClientContext* context,
                 std::chrono::system_clock::time_point deadline);
// The time left until `deadline` (kNoDeadline for none); negative once it passed.
[[nodiscard]] transport::Micros TimeoutUntil(std::chrono::system_clock::time_point deadline);
// A gRPC status as Call's errors; `what_call` names the call ("Get to n2") for the message.
// UNAVAILABLE becomes kUnavailable (resend) only if CertainlyNotHandled, else kDeadlineExceeded
// (the request may have been handled: a write's outcome is unknown; src/client/client.h).
[[nodiscard]] Status FromGrpc(const grpc::Status& status, std::string_view what_call);
// `status`, unless it is OK and a CRL revokes the certificate the server of `context`'s call
// presented: then UNAUTHENTICATED naming the certificate, and the call's answer is not to be
// used. The client half of the per-call revocation check (TlsCredentials::CheckNotRevoked): a
// connection opened before the server's certificate was revoked is refused from the first call
// after the CRL directory is read again, resumed TLS sessions included. The request itself
// reached the server. Plaintext credentials check nothing.
[[nodiscard]] grpc::Status CheckServer(const TlsCredentials& credentials,
                                       const grpc::ClientContext& context, grpc::Status status);

}  // namespace shoal::net
