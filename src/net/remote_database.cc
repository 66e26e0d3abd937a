// Database::Connect: include/shoal/shoal.h's API over the network, on a GrpcRuntime.

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "include/shoal/shoal.h"
#include "src/net/grpc_runtime.h"
#include "src/net/map_watcher.h"
#include "src/net/uri.h"
#include "src/server/database_impl.h"

namespace shoal {
namespace {
constexpr int kConnectAttempts = 4;

// A network call also pays for connection setup, and on a loaded machine a process may be
// descheduled for a second: allow more than the in-process default before a call is lost.
client::ClientOptions NetworkClientOptions(const ConnectOptions& connect) {
  client::ClientOptions options;
  options.call_timeout = 5'000'000;
  // Every task of a GrpcRuntime is an OS thread, as the coalescer requires.
  options.coalesce = connect.coalesce;
  return options;
}
}  // namespace

StatusOr<std::unique_ptr<Database>> Database::Connect(std::string_view uri,
                                                      const ConnectOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::string coordinator, net::CoordinatorsOf(uri));
  auto impl = std::make_unique<Impl>();
  SHOAL_ASSIGN_OR_RETURN(auto runtime,
                         net::GrpcRuntime::Start({.listen = {},
                                                  .advertise = {},
                                                  .coordinator = coordinator,
                                                  .address_book_path = {},
                                                  .max_message_bytes = net::kDefaultMaxMessageBytes,
                                                  .server_mode = net::GrpcServerMode::kSync}));
  impl->client = std::make_unique<client::Client>(*runtime, NetworkClientOptions(options));
  impl->remote_runtime = std::move(runtime);
  // A coordinator that is starting (or a first connection on a loaded machine) may miss one
  // deadline: try a few times before giving up.
  Status status;
  for (int attempt = 0; attempt < kConnectAttempts; ++attempt) {
    status = impl->client->Refresh();
    if (status.code() != StatusCode::kUnavailable &&
        status.code() != StatusCode::kDeadlineExceeded) {
      break;
    }
    if (attempt + 1 < kConnectAttempts) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
    }
  }
  if (!status.ok()) return Prefixed(status, fmt::format("connect to {}", coordinator));
  impl->map_watcher =
      std::make_shared<net::MapWatcher>(static_cast<net::GrpcRuntime&>(*impl->remote_runtime),
                                        *impl->client, net::MapWatcherOptions{});
  return Impl::Wrap(std::move(impl));
}

}  // namespace shoal
