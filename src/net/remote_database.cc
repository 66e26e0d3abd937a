// Database::Connect: include/shoal/shoal.h's API over the network, on a GrpcRuntime.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "include/shoal/shoal.h"
#include "src/net/grpc_runtime.h"
#include "src/net/map_watcher.h"
#include "src/net/uri.h"
#include "src/server/database_impl.h"

namespace shoal {
namespace {
// How long Connect keeps trying a coordinator that does not answer (UNAVAILABLE or a deadline):
// a coordinator that is starting, or a first connection on a loaded machine, may fail a few
// times, and gRPC fails calls at once while a channel waits to reconnect.
constexpr auto kConnectPatience = std::chrono::seconds(10);

// A network call also pays for connection setup, and on a loaded machine a process may be
// descheduled for a second: allow more than the in-process default before a call is lost.
client::ClientOptions NetworkClientOptions(const ConnectOptions& connect) {
  client::ClientOptions options;
  options.call_timeout = 5'000'000;
  // Every task of a GrpcRuntime is an OS thread, as the coalescer requires.
  options.coalesce = connect.coalesce;
  options.async_calls_in_flight = std::max<size_t>(connect.async_calls_in_flight, 1);
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
                                                  .server_mode = net::GrpcServerMode::kSync,
                                                  .pipe = options.pipe}));
  impl->client = std::make_unique<client::Client>(*runtime, NetworkClientOptions(options));
  impl->remote_runtime = std::move(runtime);
  const auto give_up = std::chrono::steady_clock::now() + kConnectPatience;
  Status status;
  for (int attempt = 0;; ++attempt) {
    status = impl->client->Refresh();
    if (status.code() != StatusCode::kUnavailable &&
        status.code() != StatusCode::kDeadlineExceeded) {
      break;
    }
    const auto pause = std::chrono::milliseconds(100 << std::min(attempt, 3));
    if (std::chrono::steady_clock::now() + pause >= give_up) break;
    std::this_thread::sleep_for(pause);
  }
  if (!status.ok()) return Prefixed(status, fmt::format("connect to {}", coordinator));
  impl->map_watcher =
      std::make_shared<net::MapWatcher>(static_cast<net::GrpcRuntime&>(*impl->remote_runtime),
                                        *impl->client, net::MapWatcherOptions{});
  return Impl::Wrap(std::move(impl));
}

}  // namespace shoal
