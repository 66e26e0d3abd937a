// Database::Connect: include/shoal/shoal.h's API over the network, on a GrpcRuntime (the remote
// DatabaseBackend of src/api/database_impl.h).

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "include/shoal/shoal.h"
#include "src/api/database_impl.h"
#include "src/net/grpc_runtime.h"
#include "src/net/uri.h"
#include "src/remote/map_watcher.h"
#include "src/security/credentials_file.h"

namespace shoal::remote {
namespace {
// A network call also pays for connection setup, and on a loaded machine a process may be
// descheduled for a second: allow more than the in-process default before a call is lost.
client::ClientOptions NetworkClientOptions(const ConnectOptions& connect) {
  client::ClientOptions options;
  options.call_timeout = 5'000'000;
  options.retry_for = client::kApplicationRetryFor;
  // Every task of a GrpcRuntime is an OS thread, as the coalescer requires.
  options.coalesce = connect.coalesce;
  options.async_calls_in_flight = std::max<size_t>(connect.async_calls_in_flight, 1);
  return options;
}

// A client of a running cluster on its own GrpcRuntime, and the client's map watch.
class RemoteBackend final : public DatabaseBackend {
 public:
  RemoteBackend(std::unique_ptr<net::GrpcRuntime> runtime, const ConnectOptions& options)
      : runtime_(std::move(runtime)),
        client_(std::make_unique<client::Client>(*runtime_, NetworkClientOptions(options))) {}

  // Fetches the first map, waiting out a coordinator that does not answer yet (UNAVAILABLE or a
  // deadline) for `patience`: a coordinator that is starting, or a first connection on a loaded
  // machine, may fail a few times, and gRPC fails calls at once while a channel waits to
  // reconnect. Then starts the map watch.
  [[nodiscard]] Status Start(const std::string& coordinator, std::chrono::milliseconds patience) {
    const auto give_up = std::chrono::steady_clock::now() + patience;
    Status status;
    for (int attempt = 0;; ++attempt) {
      status = client_->Refresh();
      if (status.code() != StatusCode::kUnavailable &&
          status.code() != StatusCode::kDeadlineExceeded) {
        break;
      }
      // Certificates that do not fit: waiting does not help.
      if (net::HandshakeFailed(status)) break;
      const auto pause = std::chrono::milliseconds(100 << std::min(attempt, 3));
      if (std::chrono::steady_clock::now() + pause >= give_up) break;
      std::this_thread::sleep_for(pause);
    }
    if (!status.ok()) return Prefixed(status, fmt::format("connect to {}", coordinator));
    map_watcher_ = std::make_unique<MapWatcher>(*runtime_, *client_, MapWatcherOptions{});
    return OkStatus();
  }

  transport::Runtime& runtime() override { return *runtime_; }
  client::Client& client() override { return *client_; }

  StatusOr<uint32_t> AddNode() override { return UnimplementedError("AddNode over the network"); }
  Status RemoveNode(uint32_t node) override {
    return UnimplementedError("RemoveNode over the network");
  }

  // Ends the map watch, then closes the runtime's channels and joins its threads.
  Status Shutdown() override {
    map_watcher_.reset();
    runtime_.reset();
    return OkStatus();
  }

 private:
  std::unique_ptr<net::GrpcRuntime> runtime_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<MapWatcher> map_watcher_;
};

}  // namespace
}  // namespace shoal::remote

namespace shoal {

StatusOr<std::unique_ptr<Database>> Database::Connect(std::string_view uri,
                                                      const ConnectOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::string coordinator, net::CoordinatorsOf(uri));
  SHOAL_ASSIGN_OR_RETURN(std::optional<security::TlsFiles> tls,
                         security::ResolveClientTls({.insecure = options.insecure,
                                                     .certs_dir = options.certs_dir,
                                                     .user = options.user,
                                                     .credentials_file = options.credentials_file},
                                                    coordinator));
  SHOAL_ASSIGN_OR_RETURN(auto runtime,
                         net::GrpcRuntime::Start({.listen = {},
                                                  .advertise = {},
                                                  .coordinator = coordinator,
                                                  .address_book_path = {},
                                                  .max_message_bytes = net::kDefaultMaxMessageBytes,
                                                  .server_mode = net::GrpcServerMode::kSync,
                                                  .pipe = options.pipe,
                                                  .security = {.tls = std::move(tls)},
                                                  .share_connections = options.share_connections}));
  auto backend = std::make_unique<remote::RemoteBackend>(std::move(runtime), options);
  SHOAL_RETURN_IF_ERROR(
      backend->Start(coordinator, std::chrono::milliseconds(options.connect_patience_ms)));
  return Database::Impl::Wrap(std::move(backend));
}

}  // namespace shoal
