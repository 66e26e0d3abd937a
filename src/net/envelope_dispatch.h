#pragma once

// What a Shoal server does with one Envelope (a Call, a page of a Scan, a message of a Pipe):
// decode it, run the handler of the process it is addressed to on the calling thread, acting
// for its sender within `runtime` (which knows whether the callee is served and whether it
// stops meanwhile), and encode the answer. GrpcRuntime serves every envelope through it; the
// wire fuzz target (tests/fuzz) calls it on an embedded cluster, without sockets.
//
// Stateless; thread-safe as `runtime` is.

#include <grpcpp/grpcpp.h>

#include <cstddef>

#include "proto/shoal.pb.h"
#include "src/transport/thread_runtime.h"

namespace shoal::net {

// `timeout` is the handler's deadline. An undecodable request is answered in *out as an error
// response; undecodable addresses are INVALID_ARGUMENT; a callee that is not served, UNAVAILABLE
// (NotHandled); one that stopped while handling it, ABORTED. An answer larger than
// `max_message_bytes` is replaced by a kResourceExhausted response.
[[nodiscard]] grpc::Status DispatchEnvelope(transport::ThreadRuntime& runtime,
                                            const wire::Envelope& envelope,
                                            transport::Micros timeout, size_t max_message_bytes,
                                            wire::Response* out);

}  // namespace shoal::net
