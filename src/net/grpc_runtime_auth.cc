// GrpcRuntime's authorization (grpc_runtime.h, "Authorization"): who the caller of a call or
// stream is, and whether its role allows the request.

#include <fmt/format.h>
#include <grpcpp/client_context.h>
#include <grpcpp/security/auth_context.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <string>
#include <string_view>

#include "proto/shoal.pb.h"
#include "src/net/call_admission.h"
#include "src/net/grpc_runtime.h"
#include "src/net/grpc_runtime_internal.h"
#include "src/net/grpc_status.h"
#include "src/security/certificates.h"

namespace shoal::net {
namespace {

grpc::StatusCode GrpcCodeOf(const Status& status) {
  return static_cast<grpc::StatusCode>(static_cast<int>(status.code()));
}

std::string MetadataValue(const grpc::ServerContextBase& context, std::string_view key) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (it == metadata.end()) return {};
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

grpc::Status GrpcRuntime::Authorize(const grpc::ServerContextBase& context, RequestAccess access,
                                    std::string_view request) {
  if (!credentials_->secure()) return grpc::Status::OK;
  grpc::Status revoked = credentials_->CheckNotRevoked(*context.auth_context());
  if (!revoked.ok()) return revoked;
  return AuthorizeCaller(context, access, request);
}

grpc::Status GrpcRuntime::AuthorizeCaller(const grpc::ServerContextBase& context,
                                          RequestAccess access, std::string_view request) {
  security::PeerIdentity peer{.certificate_name = PeerCommonName(*context.auth_context()),
                              .user = MetadataValue(context, kUserMetadataKey),
                              .password = MetadataValue(context, kPasswordMetadataKey),
                              .address = std::string(PeerHost(context.peer()))};
  auto principal = authenticator_.Authenticate(peer);
  if (!principal.ok()) {
    if (authenticator_.version() == 0) {
      // Not refused: this process does not know the users yet (a node that has not heard from
      // the coordinator since it started).
      return NotHandled("this process has not learned the cluster's users yet");
    }
    if (principal.status().code() == StatusCode::kUnavailable) {
      // Judged again by a newer table once the client resends (authenticator.h).
      return NotHandled(std::string(principal.status().message()));
    }
    return grpc::Status(GrpcCodeOf(principal.status()), std::string(principal.status().message()));
  }
  if (access.cluster_only && !principal->cluster_process) {
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        fmt::format("only cluster processes (with a node certificate) send {}", request));
  }
  const Status allowed = security::Authenticator::Authorize(*principal, access.role, request);
  if (!allowed.ok()) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(allowed.message()));
  }
  return grpc::Status::OK;
}

grpc::Status CheckServer(const TlsCredentials& credentials, const grpc::ClientContext& context,
                         grpc::Status status) {
  if (!status.ok() || !credentials.secure()) return status;
  grpc::Status revoked = credentials.CheckNotRevoked(*context.auth_context());
  if (revoked.ok()) return status;
  return grpc::Status(revoked.error_code(),
                      fmt::format("the server's {}: its answer is refused (docs/security.md)",
                                  revoked.error_message()));
}

grpc::Status GrpcRuntime::AuthorizeEnvelope(const grpc::ServerContextBase& context,
                                            const wire::Envelope& envelope) {
  if (!credentials_->secure()) return grpc::Status::OK;
  // A revoked certificate first: its holder learns why, whatever it claims to be.
  grpc::Status revoked = credentials_->CheckNotRevoked(*context.auth_context());
  if (!revoked.ok()) return revoked;
  grpc::Status sender = CheckClusterSender(envelope, PeerCommonName(*context.auth_context()));
  if (!sender.ok()) return sender;
  return AuthorizeCaller(context, AccessOf(envelope.request()), NameOf(envelope.request()));
}

}  // namespace shoal::net
