// Database::Connect: include/shoal/shoal.h's API over the network, on a GrpcRuntime.

#include <fmt/format.h>

#include "include/shoal/shoal.h"
#include "src/net/grpc_runtime.h"
#include "src/net/uri.h"
#include "src/server/database_impl.h"

namespace shoal {

StatusOr<std::unique_ptr<Database>> Database::Connect(std::string_view uri) {
  SHOAL_ASSIGN_OR_RETURN(std::string coordinator, net::CoordinatorOf(uri));
  auto impl = std::make_unique<Impl>();
  SHOAL_ASSIGN_OR_RETURN(
      auto runtime, net::GrpcRuntime::Start({.listen = {},
                                             .advertise = {},
                                             .coordinator = coordinator,
                                             .address_book_path = {},
                                             .max_message_bytes = net::kDefaultMaxMessageBytes}));
  impl->client = std::make_unique<client::Client>(*runtime);
  impl->remote_runtime = std::move(runtime);
  Status status = impl->client->Refresh();
  if (!status.ok()) return Prefixed(status, fmt::format("connect to {}", coordinator));
  return Impl::Wrap(std::move(impl));
}

}  // namespace shoal
