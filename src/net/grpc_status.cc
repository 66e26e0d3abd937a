#include "src/net/grpc_status.h"

#include <string_view>
#include <utility>

namespace shoal::net {
namespace {

// The error details of a NotHandled answer. A status gRPC makes up itself has none.
constexpr std::string_view kNotHandledDetails = "shoal:not-handled";
// The words of gRPC 1.51 for a call whose channel could not connect: nothing was sent.
constexpr std::string_view kNeverConnected = "failed to connect to all addresses";

}  // namespace

bool CertainlyNotHandled(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  return status.error_details() == kNotHandledDetails || NeverConnected(status);
}

bool NeverConnected(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         status.error_message().starts_with(kNeverConnected);
}

grpc::Status NotHandled(std::string message) {
  return {grpc::StatusCode::UNAVAILABLE, std::move(message), std::string(kNotHandledDetails)};
}

}  // namespace shoal::net
