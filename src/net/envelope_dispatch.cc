#include "src/net/envelope_dispatch.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "src/net/grpc_status.h"
#include "src/net/wire_codec.h"

namespace shoal::net {

grpc::Status DispatchEnvelope(transport::ThreadRuntime& runtime, const wire::Envelope& envelope,
                              transport::Micros timeout, size_t max_message_bytes,
                              wire::Response* out) {
  auto from = FromWire(envelope.from());
  auto to = FromWire(envelope.to());
  if (!from.ok() || !to.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed envelope address");
  }
  auto request = FromWire(envelope.request());
  if (!request.ok()) {
    ToWire(transport::Response::Error(request.status()), out);
    return grpc::Status::OK;
  }
  StatusOr<transport::Response> response;
  {
    transport::ThreadRuntime::ScopedActor actor(runtime, *from);
    response = runtime.Call(*to, std::move(*request), timeout);
  }
  if (!response.ok()) {
    const std::string message(MessageOf(response.status()));
    if (response.status().code() == StatusCode::kUnavailable) return NotHandled(message);
    return grpc::Status(grpc::StatusCode::ABORTED, message);
  }
  ToWireAnswering(envelope.request(), *response, out);
  const size_t bytes = out->ByteSizeLong();
  if (bytes > max_message_bytes) {
    out->Clear();
    ToWire(transport::Response::Error(ResourceExhaustedError(
               fmt::format("response of {} bytes exceeds the limit of {} bytes (docs/limits.md)",
                           bytes, max_message_bytes))),
           out);
  }
  return grpc::Status::OK;
}

}  // namespace shoal::net
