#pragma once

// Whether a failed gRPC call was certainly not handled by its server: the one fact a client
// needs before it may resend a write (src/client/client.h). Stateless; thread-safe.
//
// gRPC's UNAVAILABLE does not say whether the request reached the server: a call also gets it
// when the connection breaks after the request was sent ("Socket closed": the server died while
// handling it). It means "certainly not handled" only when a Shoal server answered it so
// (NotHandled) or when the channel never connected ("failed to connect to all addresses", as
// gRPC 1.51 words it). Any other UNAVAILABLE may have been handled.

#include <grpcpp/grpcpp.h>

#include <string>

namespace shoal::net {

[[nodiscard]] bool CertainlyNotHandled(const grpc::Status& status);

// The call failed because its channel could not connect (nothing was sent): the channel is
// waiting out its reconnect backoff, or its last attempt failed.
[[nodiscard]] bool NeverConnected(const grpc::Status& status);

// An UNAVAILABLE answer of a Shoal server (or of the pipe for a call it never sent): the
// request was not handled, so the caller may resend it.
[[nodiscard]] grpc::Status NotHandled(std::string message);

}  // namespace shoal::net
