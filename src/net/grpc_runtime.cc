#include "src/net/grpc_runtime.h"

#include <absl/synchronization/mutex.h>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>

#include "proto/shoal.grpc.pb.h"
#include "src/net/envelope_dispatch.h"
#include "src/net/grpc_pipe.h"
#include "src/net/grpc_runtime_internal.h"
#include "src/net/wire_codec.h"

namespace shoal::net {

using transport::Address;
using transport::Micros;

namespace {

// gRPC drives a connection attempt (its TCP connect and HTTP/2 handshake) only while some
// thread polls: a call in flight, or the client channel's backup poller, every 5 s by default.
// A client whose calls fail fast while a peer restarts has none in flight, so its channel
// reconnected only at the next backup poll; polling every 50 ms (one short wake-up per interval
// and process) makes it reconnect as soon as the peer answers (docs/results/network.md).
constexpr char kBackupPollVariable[] = "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS";
constexpr char kBackupPollMs[] = "50";
// Handlers still running when the server shuts down are cancelled after this.
constexpr auto kShutdownGrace = std::chrono::seconds(2);
// Idle threads the sync server keeps polling for calls (see StartServer).
constexpr int kSyncServerMaxPollers = 64;
// Calls and streams open at once on one client connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS,
// docs/limits.md): gRPC's client holds further ones until a slot frees, so this bounds what one
// connection makes the server hold, never fails a call.
constexpr uint32_t kMaxStreamsPerConnection = 1024;

// "host:port" with the port replaced.
std::string WithPort(const std::string& host_port, int port) {
  const auto colon = host_port.rfind(':');
  const std::string host = colon == std::string::npos ? host_port : host_port.substr(0, colon);
  return fmt::format("{}:{}", host, port);
}

}  // namespace

std::chrono::system_clock::time_point DeadlineAfter(Micros timeout) {
  return std::chrono::system_clock::now() + std::chrono::microseconds(std::max<Micros>(timeout, 0));
}

void PrepareCall(const TlsCredentials& credentials, grpc::ClientContext* context,
                 std::chrono::system_clock::time_point deadline) {
  context->set_deadline(deadline);
  credentials.AddLogin(context);
}

Micros TimeoutUntil(std::chrono::system_clock::time_point deadline) {
  if (deadline == std::chrono::system_clock::time_point::max()) return kNoDeadline;
  return std::chrono::duration_cast<std::chrono::microseconds>(deadline -
                                                               std::chrono::system_clock::now())
      .count();
}

Status FromGrpc(const grpc::Status& status, std::string_view what_call) {
  std::string what = fmt::format("{}: {}", what_call, status.error_message());
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    if (const std::string hint = SecurityHint(status.error_message()); !hint.empty()) {
      what += fmt::format(" ({})", hint);
    }
  }
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
      if (CertainlyNotHandled(status)) return UnavailableError(what);
      return DeadlineExceededError(
          fmt::format("{} (the connection broke; the request may have been handled)", what));
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return ResourceExhaustedError(what);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return InvalidArgumentError(what);
    case grpc::StatusCode::UNIMPLEMENTED:
      return UnimplementedError(what);
    // Refused before the handler ran (docs/security.md).
    case grpc::StatusCode::PERMISSION_DENIED:
      return PermissionDeniedError(what);
    case grpc::StatusCode::UNAUTHENTICATED:
      return UnauthenticatedError(what);
    // ABORTED: the callee stopped while handling the request. Like a timeout, the request may
    // have been handled.
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    default:
      return DeadlineExceededError(what);
  }
}

namespace {

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (!list.empty()) {
    const size_t comma = list.find(',', begin);
    out.push_back(list.substr(begin, comma == std::string::npos ? comma : comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

// A call CallAdmission refused, as gRPC answers it.
grpc::Status ResourceExhausted(const Status& refused) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, std::string(MessageOf(refused)));
}
// Shoal.Resolve and Shoal.WatchMap carry no Request: reading the cluster's shape needs kRead.
constexpr RequestAccess kResolveAccess{.role = security::Role::kRead};
constexpr RequestAccess kWatchMapAccess{.role = security::Role::kRead};

}  // namespace

// The Shoal service of one GrpcRuntime's synchronous server: gRPC calls it from many threads
// at once; it keeps no state.
// Serves Shoal.Pipe on the completion-queue API (PipeServer, grpc_pipe.h).
class GrpcRuntime::Handler final : public wire::Shoal::WithAsyncMethod_Pipe<wire::Shoal::Service> {
 public:
  explicit Handler(GrpcRuntime* runtime) : runtime_(runtime) {}

  grpc::Status Call(grpc::ServerContext* context, const wire::Envelope* envelope,
                    wire::Response* out) override {
    grpc::Status allowed = runtime_->AuthorizeEnvelope(*context, *envelope);
    if (!allowed.ok()) return allowed;
    auto ticket = runtime_->admission_.Admit(context->peer());
    if (!ticket.ok()) return ResourceExhausted(ticket.status());
    return runtime_->HandleEnvelope(*envelope, context->deadline(), out);
  }
  grpc::Status Admin(grpc::ServerContext* context, const wire::AdminRequest* request,
                     wire::AdminResponse* out) override {
    auto ticket = runtime_->admission_.Admit(context->peer());
    if (!ticket.ok()) return ResourceExhausted(ticket.status());
    return runtime_->HandleAdmin(*context, *request, out);
  }
  grpc::Status Resolve(grpc::ServerContext* context, const wire::ResolveRequest*,
                       wire::ResolveResponse* out) override {
    auto ticket = runtime_->admission_.Admit(context->peer());
    if (!ticket.ok()) return ResourceExhausted(ticket.status());
    grpc::Status allowed = runtime_->Authorize(*context, kResolveAccess, "resolve");
    if (!allowed.ok()) return allowed;
    return runtime_->HandleResolve(out);
  }
  grpc::Status WatchMap(grpc::ServerContext* context, const wire::WatchMapRequest* request,
                        wire::WatchMapResponse* out) override {
    grpc::Status allowed = runtime_->Authorize(*context, kWatchMapAccess, "watch_map");
    if (!allowed.ok()) return allowed;
    return runtime_->HandleWatchMap(
        *request, [context] { return context->IsCancelled(); }, out);
  }
  grpc::Status Scan(grpc::ServerContext* context, const wire::Envelope* envelope,
                    grpc::ServerWriter<wire::Response>* writer) override {
    return runtime_->ServeScan(context, *envelope, writer);
  }

 private:
  GrpcRuntime* const runtime_;
};

// The Shoal service of one GrpcRuntime's callback server. Call and Admin may block (a handler
// waits for storage, a map or a move), so they run on the runtime's WorkerPool; the reactor
// finishes from there. Resolve only copies the address book and answers inline.
class GrpcRuntime::CallbackHandler final : public wire::Shoal::CallbackService {
 public:
  explicit CallbackHandler(GrpcRuntime* runtime) : runtime_(runtime) {}

  grpc::ServerUnaryReactor* Call(grpc::CallbackServerContext* context,
                                 const wire::Envelope* envelope, wire::Response* out) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    auto ticket = runtime_->admission_.Admit(context->peer());
    if (!ticket.ok()) {
      reactor->Finish(ResourceExhausted(ticket.status()));
      return reactor;
    }
    // The envelope, the response and the context live until the reactor finishes. Authorizing
    // may wait for the coordinator (a node's refresh of its users): on the worker too.
    runtime_->workers_->Submit([this, reactor, context, envelope, out, ticket = *ticket] {
      grpc::Status allowed = runtime_->AuthorizeEnvelope(*context, *envelope);
      reactor->Finish(allowed.ok() ? runtime_->HandleEnvelope(*envelope, context->deadline(), out)
                                   : allowed);
    });
    return reactor;
  }
  grpc::ServerUnaryReactor* Admin(grpc::CallbackServerContext* context,
                                  const wire::AdminRequest* request,
                                  wire::AdminResponse* out) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    auto ticket = runtime_->admission_.Admit(context->peer());
    if (!ticket.ok()) {
      reactor->Finish(ResourceExhausted(ticket.status()));
      return reactor;
    }
    runtime_->workers_->Submit([this, reactor, context, request, out, ticket = *ticket] {
      reactor->Finish(runtime_->HandleAdmin(*context, *request, out));
    });
    return reactor;
  }
  grpc::ServerUnaryReactor* WatchMap(grpc::CallbackServerContext* context,
                                     const wire::WatchMapRequest* request,
                                     wire::WatchMapResponse* out) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    runtime_->workers_->Submit([this, reactor, context, request, out] {
      grpc::Status allowed = runtime_->Authorize(*context, kWatchMapAccess, "watch_map");
      if (!allowed.ok()) {
        reactor->Finish(allowed);
        return;
      }
      reactor->Finish(runtime_->HandleWatchMap(
          *request, [context] { return context->IsCancelled(); }, out));
    });
    return reactor;
  }
  grpc::ServerUnaryReactor* Resolve(grpc::CallbackServerContext* context,
                                    const wire::ResolveRequest*,
                                    wire::ResolveResponse* out) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    auto ticket = runtime_->admission_.Admit(context->peer());
    if (!ticket.ok()) {
      reactor->Finish(ResourceExhausted(ticket.status()));
      return reactor;
    }
    grpc::Status allowed = runtime_->Authorize(*context, kResolveAccess, "resolve");
    reactor->Finish(allowed.ok() ? runtime_->HandleResolve(out) : allowed);
    return reactor;
  }
  grpc::ServerWriteReactor<wire::Response>* Scan(grpc::CallbackServerContext* context,
                                                 const wire::Envelope* envelope) override {
    return runtime_->StartScan(context, *envelope);
  }
  grpc::ServerBidiReactor<wire::PipeCall, wire::PipeReply>* Pipe(
      grpc::CallbackServerContext* context) override {
    return NewPipeReactor(context, &runtime_->pipe_handle_, runtime_->workers_.get(),
                          &runtime_->admission_, context->peer());
  }

 private:
  GrpcRuntime* const runtime_;
};

grpc::Status GrpcRuntime::HandleEnvelope(const wire::Envelope& envelope,
                                         std::chrono::system_clock::time_point deadline,
                                         wire::Response* out) {
  // The sender's address: learned at once when unknown; a new one replaces the known one only
  // once this process accepted the envelope, so that a refused sender (a second process started
  // with a node's --id: Membership::AdmitStore) never takes the node's address over.
  std::optional<Address> learn;
  if (!envelope.from_listen().empty()) {
    if (auto from = FromWire(envelope.from()); from.ok() && from->kind != Address::Kind::kClient) {
      learn = *from;
      if (!KnowsAddress(*learn)) {
        SetAddress(*learn, envelope.from_listen());
        learn.reset();
      }
    }
  }
  grpc::Status status =
      DispatchEnvelope(local_, envelope, TimeoutUntil(deadline), options_.max_message_bytes, out);
  if (learn.has_value() && status.ok() && out->status().code() == 0) {
    SetAddress(*learn, envelope.from_listen());
  }
  return status;
}

grpc::Status GrpcRuntime::HandleAdmin(const grpc::ServerContextBase& context,
                                      const wire::AdminRequest& request, wire::AdminResponse* out) {
  if (grpc::Status allowed = Authorize(context, AccessOf(request), NameOf(request));
      !allowed.ok()) {
    return allowed;
  }
  if (request.has_set_failpoints()) {
    // Any process answers this one itself: the failpoints are its runtime's. A failpoint can
    // crash or stall the process, so only one started to be tested takes them from the network.
    ToWire(options_.remote_failpoints ? local_.SetFailpoints(request.set_failpoints().spec())
                                      : FailedPreconditionError(kRemoteFailpointsOff),
           out->mutable_status());
    out->set_failpoints(local_.FailpointSpec());
    return grpc::Status::OK;
  }
  if (grpc::Status standby = StandbyStatus(); !standby.ok()) return standby;
  std::shared_ptr<AdminHandler> handler;
  {
    absl::MutexLock lock(&mu_);
    handler = admin_;
  }
  if (handler == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "not a coordinator");
  }
  (*handler)(request, out);
  return grpc::Status::OK;
}

grpc::Status GrpcRuntime::HandleWatchMap(const wire::WatchMapRequest& request,
                                         const std::function<bool()>& cancelled,
                                         wire::WatchMapResponse* out) {
  if (grpc::Status standby = StandbyStatus(); !standby.ok()) return standby;
  std::shared_ptr<MapWatchHandler> handler;
  {
    absl::MutexLock lock(&mu_);
    handler = map_watch_;
  }
  if (handler == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "not a coordinator");
  }
  (*handler)(request, cancelled, out);
  return grpc::Status::OK;
}

int GrpcRuntime::GrpcMessageLimit() const {
  // Shoal checks every Envelope and Response against max_message_bytes itself; gRPC's own limit
  // is a backstop that leaves room for a pipe message's framing around them.
  return static_cast<int>(std::min<size_t>(options_.max_message_bytes + kPipeFramingBytes,
                                           std::numeric_limits<int>::max()));
}

GrpcRuntime::GrpcRuntime(const GrpcRuntimeOptions& options)
    : options_(options),
      authenticator_(options.security.authentication),
      coordinators_(SplitList(options.coordinator)),
      admission_(options.call_limits) {}

GrpcRuntime::~GrpcRuntime() { Shutdown(); }

StatusOr<std::unique_ptr<GrpcRuntime>> GrpcRuntime::Start(const GrpcRuntimeOptions& options) {
  if (options.max_message_bytes == 0 ||
      options.max_message_bytes > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return InvalidArgumentError("max_message_bytes must be in [1, 2^31)");
  }
  SHOAL_RETURN_IF_ERROR(ValidateCallLimits(options.call_limits));
  SHOAL_RETURN_IF_ERROR(security::CheckAuthenticatorOptions(options.security.authentication));
  // This build's abseil checks every absl::Mutex acquisition (gRPC's, on every call) for
  // lock-order cycles, a debug aid that cost ~3% of a node and of a client in the profile
  // (docs/results/network.md). Process-wide, so Shoal's own absl::Mutex locks go unchecked here
  // too; their discipline is checked at build time (scripts/check-thread-safety.sh).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Read when gRPC initializes, i.e. before the first runtime's first channel or server; a value
  // set in the environment is kept.
  ::setenv(kBackupPollVariable, kBackupPollMs, /*overwrite=*/0);
  std::unique_ptr<GrpcRuntime> runtime(new GrpcRuntime(options));
  SHOAL_ASSIGN_OR_RETURN(runtime->credentials_, options.share_connections
                                                    ? TlsCredentials::Shared(options.security)
                                                    : TlsCredentials::Create(options.security));
  runtime->LoadAddressBook();
  if (!options.listen.empty()) SHOAL_RETURN_IF_ERROR(runtime->StartServer());
  if (options.pipe) {
    runtime->pipe_client_ = std::make_unique<PipeClient>(
        [credentials = runtime->credentials_](const grpc::ClientContext& context,
                                              grpc::Status status) {
          return CheckServer(*credentials, context, std::move(status));
        },
        [credentials = runtime->credentials_](grpc::ClientContext* context) {
          credentials->AddLogin(context);
        });
  }
  if (!runtime->coordinators_.empty()) {
    for (const auto& address : runtime->coordinators_) {
      if (address.empty()) return InvalidArgumentError("an empty coordinator address");
    }
    runtime->SetAddress(Address::Coordinator(), runtime->coordinators_.front());
  } else if (!runtime->advertised_.empty()) {
    runtime->SetAddress(Address::Coordinator(), runtime->advertised_);
  }
  return runtime;
}

Status GrpcRuntime::StartServer() {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options_.listen, credentials_->Server(), &port);
  // Pipe calls are handed to workers in both modes (a handler may block).
  workers_ = std::make_unique<WorkerPool>(kMaxCallbackWorkers);
  pipe_handle_ = [this](const grpc::ServerContextBase& context, const wire::PipeCall& call,
                        wire::PipeReply* reply) {
    const auto deadline = DeadlineAfter(call.timeout_micros() > 0
                                            ? static_cast<transport::Micros>(call.timeout_micros())
                                            : kNoDeadline);
    // Authorized per call, from the authenticator's cache: a pipe stays open for as long as
    // its client, and a revoked user is refused from the next call.
    grpc::Status status = AuthorizeEnvelope(context, call.envelope());
    if (status.ok()) status = HandleEnvelope(call.envelope(), deadline, reply->mutable_response());
    reply->set_code(static_cast<int32_t>(status.error_code()));
    reply->set_message(status.error_message());
    reply->set_details(status.error_details());
  };
  std::unique_ptr<grpc::ServerCompletionQueue> pipe_queue;  // the sync server's pipe
  switch (options_.server_mode) {
    case GrpcServerMode::kSync:
      handler_ = std::make_unique<Handler>(this);
      pipe_queue = builder.AddCompletionQueue();
      builder.RegisterService(handler_.get());
      // gRPC's default (at most 2 idle polling threads) makes each call beyond the second
      // start a thread and end it afterwards: keep enough threads for the clients instead.
      builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                                  kSyncServerMaxPollers);
      break;
    case GrpcServerMode::kCallback:
      callback_handler_ = std::make_unique<CallbackHandler>(this);
      builder.RegisterService(callback_handler_.get());
      break;
  }
  builder.SetMaxReceiveMessageSize(GrpcMessageLimit());
  builder.SetMaxSendMessageSize(GrpcMessageLimit());
  // Without this, gRPC sets SO_REUSEPORT and two servers could share one port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(kMaxStreamsPerConnection));
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    server_.reset();
    if (pipe_queue != nullptr) {
      pipe_queue->Shutdown();  // gRPC requires a drained queue before its destruction
      void* tag = nullptr;
      bool ok = false;
      while (pipe_queue->Next(&tag, &ok)) {
      }
    }
    return UnavailableError(fmt::format("cannot listen on {}", options_.listen));
  }
  advertised_ = options_.advertise.empty() ? WithPort(options_.listen, port) : options_.advertise;
  if (pipe_queue != nullptr) {
    pipe_server_ = std::make_unique<PipeServer>(
        std::move(pipe_queue),
        [handler = handler_.get()](auto* context, auto* stream, auto* cq, void* tag) {
          handler->RequestPipe(context, stream, cq, cq, tag);
        },
        pipe_handle_, workers_.get(), &admission_);
    pipe_server_->Start();
  }
  return OkStatus();
}

void GrpcRuntime::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  // Processes first: their sleeps and handlers end, and calls still arriving answer kUnavailable.
  local_.Shutdown();
  EndAsyncCalls();
  if (pipe_client_ != nullptr) pipe_client_->Shutdown();
  if (pipe_server_ != nullptr) pipe_server_->StopAccepting();
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  // After the server: its shutdown waits for the handlers the pool still runs.
  if (workers_ != nullptr) workers_->Shutdown();
  // Last: the pipe's replies are written by the workers.
  if (pipe_server_ != nullptr) pipe_server_->Shutdown();
}

void GrpcRuntime::SetAdminHandler(AdminHandler handler) {
  absl::MutexLock lock(&mu_);
  admin_ = std::make_shared<AdminHandler>(std::move(handler));
}

void GrpcRuntime::SetMapWatchHandler(MapWatchHandler handler) {
  absl::MutexLock lock(&mu_);
  map_watch_ = std::make_shared<MapWatchHandler>(std::move(handler));
}

void GrpcRuntime::SetStandby(bool standby, std::string leader) {
  absl::MutexLock lock(&mu_);
  standby_ = standby;
  leader_ = std::move(leader);
}

grpc::Status GrpcRuntime::StandbyStatus() const {
  absl::MutexLock lock(&mu_);
  if (!standby_) return grpc::Status::OK;
  return NotHandled(fmt::format("not the leader coordinator (leader: {})",
                                leader_.empty() ? std::string("unknown") : leader_));
}

Status GrpcRuntime::FillEnvelope(const Address& to, const transport::Request& request,
                                 wire::Envelope* envelope) const {
  const Address self = Self();
  ToWire(self, envelope->mutable_from());
  ToWire(to, envelope->mutable_to());
  if (self.kind != Address::Kind::kClient) envelope->set_from_listen(advertised_);
  ToWire(request, envelope->mutable_request());
  const size_t bytes = envelope->ByteSizeLong();
  if (bytes > options_.max_message_bytes) {
    return ResourceExhaustedError(
        fmt::format("{}: request of {} bytes exceeds the limit of {} bytes (docs/limits.md)",
                    RequestName(request), bytes, options_.max_message_bytes));
  }
  return OkStatus();
}

StatusOr<transport::Response> GrpcRuntime::Answer(const grpc::Status& status,
                                                  const wire::Response& reply, const Address& to,
                                                  std::string_view host_port,
                                                  std::string_view request_name) {
  if (!status.ok()) {
    ReconnectSoon(std::string(host_port), status);
    // A node that answered NotHandled itself (e.g. while it fetches the users to judge this
    // caller) is where the book says: keep its address, or a caller the coordinator no longer
    // resolves for could not reach it again.
    const bool answered = CertainlyNotHandled(status) && !NeverConnected(status);
    if (to.kind != Address::Kind::kCoordinator &&
        status.error_code() == grpc::StatusCode::UNAVAILABLE && !answered) {
      Forget(to);
    }
    return FromGrpc(status,
                    fmt::format("{} to {} at {}", request_name, to.DebugString(), host_port));
  }
  auto response = FromWire(reply);
  if (!response.ok()) {
    return InternalError(fmt::format("{}: undecodable response from {}: {}", request_name,
                                     to.DebugString(), MessageOf(response.status())));
  }
  return response;
}

StatusOr<transport::Response> GrpcRuntime::Call(const Address& to, transport::Request request,
                                                Micros timeout) {
  if (!Alive()) return CancelledError("process stopped");
  wire::Envelope envelope;
  SHOAL_RETURN_IF_ERROR(FillEnvelope(to, request, &envelope));

  // A call to the coordinator that certainly was not handled (the address is down or a standby)
  // goes on to the next configured coordinator, each once, within the one deadline.
  const bool to_coordinator = to.kind == Address::Kind::kCoordinator;
  const size_t attempts = to_coordinator ? std::max<size_t>(1, coordinators_.size()) : 1;
  const auto deadline = DeadlineAfter(timeout);
  grpc::Status status;
  wire::Response reply;
  std::shared_ptr<Peer> peer;  // of the last attempt
  for (size_t attempt = 0; attempt < attempts; ++attempt) {
    std::string host_port;  // of the coordinator tried (only a coordinator's is needed)
    if (to_coordinator) {
      auto resolved = Resolve(to);
      if (!resolved.ok()) return Prefixed(resolved.status(), RequestName(request));
      host_port = *std::move(resolved);
      peer = PeerFor(host_port);
    } else {
      auto found = PeerOf(to);
      if (!found.ok()) return Prefixed(found.status(), RequestName(request));
      peer = *std::move(found);
    }
    grpc::ClientContext context;
    PrepareCall(*credentials_, &context, deadline);
    reply.Clear();
    status = CheckServer(*credentials_, context, peer->stub->Call(&context, envelope, &reply));
    if (!Alive()) return CancelledError("process stopped");
    if (status.ok()) break;
    if (to_coordinator) {
      NextCoordinator(host_port);
      if (CertainlyNotHandled(status)) continue;
    }
    break;
  }
  return Answer(status, reply, to, peer->host_port, RequestName(request));
}

}  // namespace shoal::net
