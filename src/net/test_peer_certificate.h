#pragma once

// PeerCertificate: for tests of TLS (tls_credentials_test.cc, tests/cluster/tls_test.cc), the
// certificate a server presents on a new connection of its own, and the call's status. Thread-
// safe.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "proto/shoal.grpc.pb.h"
#include "src/net/grpc_status.h"
#include "src/net/tls_credentials.h"

namespace shoal::net {

struct PeerAnswer {
  grpc::Status status;
  std::string certificate_pem;  // empty when no TLS connection was made
};

// One Shoal.Resolve to `host_port` over a channel with a subchannel pool of its own (so a new
// connection and handshake, never one another channel opened before).
[[nodiscard]] inline PeerAnswer PeerCertificate(const std::string& host_port,
                                                const TransportSecurity& security) {
  auto credentials = TlsCredentials::Create(security);
  if (!credentials.ok()) {
    return {.status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                   credentials.status().ToString()),
            .certificate_pem = {}};
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(host_port, (*credentials)->Channel(), args);
  auto stub = wire::Shoal::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  wire::ResolveRequest request;
  wire::ResolveResponse response;
  PeerAnswer answer;
  answer.status = stub->Resolve(&context, request, &response);
  const auto auth = context.auth_context();
  if (auth != nullptr) {
    const auto values = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    if (!values.empty())
      answer.certificate_pem.assign(values.front().data(), values.front().size());
  }
  return answer;
}

}  // namespace shoal::net
