#pragma once

// GrpcRuntime: the Runtime of one Shoal process on a network (docs/design/network.md).
//   - Call is one unary gRPC (Shoal.Call in proto/shoal.proto) to the host:port of the callee,
//     found in an address book (below).
//   - Serve registers a Service; the process's one gRPC server dispatches each Envelope to the
//     Service of its `to` address, on a thread acting for the callee: a gRPC thread of the
//     synchronous server, or (GrpcServerMode::kCallback) a WorkerPool thread to which the
//     callback server hands every Call and Admin, since a Shoal handler may block and a blocked
//     gRPC callback thread would stall other calls.
//   - Now, Sleep, Await, Spawn, Stop, Self, Alive, RandomU64 and Failpoint are those of a
//   ThreadRuntime
//     inside (tasks are threads, time is the steady clock); incoming requests are delivered
//     through that ThreadRuntime's Call so that incarnations and stops behave the same way.
//
// Addresses: the coordinator's host:port is configured (GrpcRuntimeOptions::coordinator) or is
// this process's own. Every Envelope carries the host:port its sender serves on, so the
// coordinator learns each node's address from the node's first request (its heartbeat) and
// keeps the book in a file across restarts. A known address is replaced only by the sender of
// an envelope this process answered OK (a refused heartbeat moves nothing). Any other process that
// needs an address it does not know asks the coordinator's server (Shoal.Resolve) for its book; an
// address that refuses a connection is forgotten and resolved again on the next call.
//
// Several coordinators (failover under ZooKeeper): GrpcRuntimeOptions::coordinator may list
// several host:port, comma-separated. Calls go to one of them; when a call to the coordinator,
// an admin request or a Resolve fails with anything but a definite answer (the process is down,
// or it is a standby, which answers every such call with kUnavailable), the next address of the
// list is used from then on. A standby coordinator's runtime is marked with SetStandby: its
// Resolve and Admin answer kUnavailable naming the leader it knows, and its Call answers
// kUnavailable because it serves no coordinator process.
//
// Map watch (docs/design/network.md "Map watch"): WatchMap is a long poll of Shoal.WatchMap at
// the coordinator, which answers as soon as it commits a map newer than the caller's (or when the
// hold runs out, with no map). It follows the coordinators like Admin: an unreachable or standby
// coordinator (UNAVAILABLE), or one that cancelled the call (a server shutting down), sends the
// call to the next one, so one call tries every configured coordinator once. A CallCanceller ends
// a waiting call from another thread; nothing else makes WatchMap answer kCancelled.
//
// Limits (docs/limits.md): one request or response is at most max_message_bytes when serialized
// (default kDefaultMaxMessageBytes). A larger request fails in Call with kResourceExhausted
// before anything is sent; a larger response is replaced by a kResourceExhausted response.
// Calls in flight on the server (Shoal.Call requests and Shoal.Pipe calls), in all and per client
// address, are bounded by GrpcRuntimeOptions::call_limits (CallAdmission): one more is refused
// with kResourceExhausted.
//
// Streams (Shoal.Scan, StreamScan): the server runs the callee's scan handler page after page
// on a thread acting for the callee (a sync-server thread, or a WorkerPool thread in callback
// mode) and writes each page as one message. Invariants:
//   - at most one page is computed ahead of what the transport accepted: a sync Write blocks,
//     and the callback reactor computes the next page only when the previous write completed;
//     gRPC's flow control thus bounds what a slow reader makes the server buffer;
//   - every page is the handler's answer at its own epoch check (the same fencing as Call); an
//     error page is the stream's last message;
//   - pages follow the handler's cursor order, so a client that resumes from the last cursor it
//     received loses and repeats nothing.
// Limits (StreamLimits; docs/design/network.md "Limits"), each refused with a clean error:
// documents per message (a request asking for more: kInvalidArgument), key + body bytes per
// message (the page ends before the document that would cross it; a lone larger document still
// goes), concurrent streams per server (one more: kResourceExhausted), stream duration (the
// stream ends with kDeadlineExceeded; the client resumes from its last cursor).
//
// Errors of Call (runtime.h): kUnavailable when the callee cannot be reached (connection
// refused, no known address, the callee does not serve that process): certainly not handled;
// kDeadlineExceeded when no response came within the timeout or the callee stopped while
// handling it: possibly handled; kCancelled when the calling process was stopped;
// kResourceExhausted for an oversized request.
//
// Authorization (docs/security.md, "Users and roles"; grpc_runtime_auth.cc): over TLS, every
// Call, Pipe call, Scan, Admin, Resolve and WatchMap is authenticated (authenticator(): a node
// certificate, a user's password in the call metadata, or a user's certificate) and checked
// against the role its request needs (request_roles.h) before anything is decoded, read or
// changed: UNAUTHENTICATED or PERMISSION_DENIED otherwise. A peer certificate revoked by the CRLs
// is refused there too (UNAUTHENTICATED), on connections opened before the revocation as well
// (TlsCredentials::CheckNotRevoked). A process that has not learned the user table yet
// (version 0) answers UNAVAILABLE, certainly not handled, so clients retry.
// Plaintext (--insecure): no authentication.
//
// Thread-safety: every method is thread-safe. Shutdown (or the destructor) must not be called
// from a task or a handler.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/net/call_admission.h"
#include "src/net/request_roles.h"
#include "src/net/tls_credentials.h"
#include "src/net/worker_pool.h"
#include "src/security/authenticator.h"
#include "src/transport/runtime.h"
#include "src/transport/thread_runtime.h"

namespace grpc {
class ClientContext;
class ServerContextBase;
class CallbackServerContext;
class Server;
class ServerContext;
class Status;
template <class W>
class ServerWriter;
template <class W>
class ServerWriteReactor;
}  // namespace grpc

namespace shoal::wire {
class AdminRequest;
class AdminResponse;
class WatchMapRequest;
class WatchMapResponse;
class Envelope;
class PipeCall;
class PipeReply;
class ResolveResponse;
class Response;
}  // namespace shoal::wire

namespace shoal::net {

class PipeClient;  // grpc_pipe.h
class PipeServer;  // grpc_pipe.h

// 64 MiB: above the largest body (1 MiB) times a full scan page would be too much, so scans
// are bounded by count; this bound only stops a runaway message.
inline constexpr size_t kDefaultMaxMessageBytes = size_t{64} << 20;

// Which gRPC server API answers Shoal.Call (docs/design/network.md, "Server API"; measured in
// docs/results/network.md).
enum class GrpcServerMode {
  kSync,      // grpc::Service: each call runs on a gRPC sync-server thread
  kCallback,  // grpc::CallbackService: each call is handed to a WorkerPool thread
};

// "sync" / "callback"; kInvalidArgument for anything else.
[[nodiscard]] StatusOr<GrpcServerMode> ParseGrpcServerMode(std::string_view text);

// The callback server's WorkerPool starts at most this many threads; more concurrent calls
// wait in its queue.
inline constexpr size_t kMaxCallbackWorkers = 1024;

// Ends a GrpcRuntime::WatchMap in flight from another thread, and every later one it is passed
// to, with kCancelled; only this ends a watch with kCancelled (a call the server cancelled, e.g.
// while shutting down, moves on to the next coordinator). It tracks one call at a time: give
// each concurrent call its own. Thread-safe.
class CallCanceller {
 public:
  void Cancel();

 private:
  friend class GrpcRuntime;
  // False if cancelled already; else `context` is cancelled by a later Cancel until Detach.
  [[nodiscard]] bool Attach(grpc::ClientContext* context);
  // Whether Cancel was called: a CANCELLED call was ended by this canceller only then (a server
  // that shuts down cancels the calls it still holds too).
  [[nodiscard]] bool Detach();

  absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// The longest a coordinator holds a map watch without news (WatchMapRequest::hold_millis).
inline constexpr uint32_t kMaxWatchHoldMillis = 60'000;

// Limits of the streams a server serves (the header's "Streams").
inline constexpr uint32_t kDefaultStreamDocuments = 1000;
inline constexpr uint32_t kDefaultStreamBytes = uint32_t{4} << 20;
inline constexpr uint32_t kDefaultMaxStreams = 64;
inline constexpr transport::Micros kDefaultMaxStreamDuration = transport::Micros{600} * 1'000'000;

struct StreamLimits {
  uint32_t max_documents = kDefaultStreamDocuments;            // per message, >= 1
  uint32_t max_bytes = kDefaultStreamBytes;                    // key + body bytes per message, >= 1
  uint32_t max_streams = kDefaultMaxStreams;                   // open at once on this server
  transport::Micros max_duration = kDefaultMaxStreamDuration;  // per stream, > 0
};

// The error message of AdminRequest.set_failpoints to a process without remote_failpoints.
inline constexpr std::string_view kRemoteFailpointsOff =
    "this process was started without --enable-failpoints; failpoints cannot be set over the "
    "network (docs/security.md)";

struct GrpcRuntimeOptions {
  // "host:port" to serve on; port 0 picks a free port. Empty: serve nothing (a client).
  std::string listen{};
  // "host:port" other processes use to reach this one; empty = the listen host with the bound
  // port.
  std::string advertise{};
  // "host:port[,host:port...]" of the coordinators; empty when this process is a coordinator.
  std::string coordinator{};
  // The coordinator keeps its address book here ("" = in memory only).
  std::string address_book_path{};
  size_t max_message_bytes = kDefaultMaxMessageBytes;
  GrpcServerMode server_mode = GrpcServerMode::kSync;
  // CallAsync to a node sends each call as a message of one Shoal.Pipe stream per node
  // (grpc_pipe.h) instead of one unary Shoal.Call. Every server answers both.
  bool pipe = false;
  // Calls held at once, in all and per client address (call_admission.h).
  CallLimits call_limits{};
  // TLS of the server and of every channel (tls_credentials.h); plaintext by default, which only
  // tests and --insecure processes use: the commands refuse to start a server without
  // --certs-dir or --insecure.
  TransportSecurity security{};
  // Whether AdminRequest.set_failpoints may replace this process's failpoints over the network
  // (`--enable-failpoints`). Off, the request is refused with kFailedPrecondition and nothing
  // changes; failpoints from the environment (failpoints.h) apply either way.
  bool remote_failpoints = false;
  // Whether this runtime's channels share their connections with the other runtimes of the
  // process that reach the same server with equal credentials (TlsCredentials::Shared, gRPC's
  // global subchannel pool). False: connections of its own, as a separate process would have.
  bool share_connections = true;
};

class GrpcRuntime final : public transport::Runtime {
 public:
  // Starts the server (when options.listen is set). kUnavailable if the address cannot be bound.
  [[nodiscard]] static StatusOr<std::unique_ptr<GrpcRuntime>> Start(
      const GrpcRuntimeOptions& options);
  ~GrpcRuntime() override;
  GrpcRuntime(const GrpcRuntime&) = delete;
  GrpcRuntime& operator=(const GrpcRuntime&) = delete;

  // Stops serving (in-flight handlers get a short grace period), then stops every process and
  // joins the tasks. Idempotent.
  void Shutdown();

  // The host:port other processes reach this one on ("" for a client).
  [[nodiscard]] std::string advertised_address() const { return advertised_; }
  // Records (or replaces) the host:port of a process.
  void SetAddress(const transport::Address& who, const std::string& host_port);
  // Whether the book has an address for `who`.
  [[nodiscard]] bool KnowsAddress(const transport::Address& who) const;
  // The known address book, as "who -> host:port".
  [[nodiscard]] std::map<transport::Address, std::string> AddressBook() const;
  // The host:port of `to`: from the book, else asked of the coordinator (which keeps the address
  // of a process that does not answer). kUnavailable if no one knows it.
  [[nodiscard]] StatusOr<std::string> Resolve(const transport::Address& to);

  // Answers Shoal.Admin on this process's server (the coordinator's); without a handler it is
  // kUnimplemented. The handler runs on a gRPC thread, outside any task.
  using AdminHandler = std::function<void(const wire::AdminRequest&, wire::AdminResponse*)>;
  void SetAdminHandler(AdminHandler handler);
  // Sends an admin request to the process serving on `host_port` (e.g. SetFailpoints to a node).
  [[nodiscard]] StatusOr<wire::AdminResponse> AdminAt(const std::string& host_port,
                                                      const wire::AdminRequest& request,
                                                      transport::Micros timeout);
  // Marks a coordinator process as a standby (true) or the leader (false, the default); `leader`
  // names the leader for the errors a standby answers with ("" if unknown).
  void SetStandby(bool standby, std::string leader);
  // Answers Shoal.WatchMap on this process's server (the leader coordinator's); without a handler
  // it is kUnimplemented, on a standby UNAVAILABLE naming the leader. The handler may block up to
  // the request's hold on a gRPC (or worker) thread; `cancelled` tells whether the caller gave up
  // (cancelled, or its deadline passed), so that its wait can end early.
  using MapWatchHandler =
      std::function<void(const wire::WatchMapRequest&, const std::function<bool()>& cancelled,
                         wire::WatchMapResponse*)>;
  void SetMapWatchHandler(MapWatchHandler handler);
  // Waits up to `hold` (at most kMaxWatchHoldMillis) at the coordinator for a map newer than
  // `known`: the cluster state with that map, or nullopt when the hold ran out. kCancelled once
  // `canceller` (may be null) is cancelled.
  [[nodiscard]] StatusOr<std::optional<transport::ClusterState>> WatchMap(
      MapEpoch known, std::chrono::milliseconds hold, CallCanceller* canceller);
  // Replaces the limits of the streams this server accepts from now on. kInvalidArgument (and
  // nothing changes) for a zero limit.
  [[nodiscard]] Status SetStreamLimits(const StreamLimits& limits);
  [[nodiscard]] StreamLimits stream_limits() const;
  // Sends an admin request to the coordinator (trying each configured one in turn); the
  // answer's own error status is returned as the error.
  [[nodiscard]] StatusOr<wire::AdminResponse> Admin(const wire::AdminRequest& request,
                                                    transport::Micros timeout);
  // As Admin, but returns the answer whatever its status: an error means that no coordinator
  // answered, kUnavailable when certainly none handled it (unreachable, or a standby) and
  // kDeadlineExceeded when one may have (no answer in time, or the connection broke).
  [[nodiscard]] StatusOr<wire::AdminResponse> AdminAnswer(const wire::AdminRequest& request,
                                                          transport::Micros timeout);

  // The users this server authenticates against; the coordinator and the nodes install the
  // user table in it (process/user_admin.h).
  [[nodiscard]] security::Authenticator& authenticator() { return authenticator_; }

  [[nodiscard]] transport::Micros Now() const override { return local_.Now(); }
  [[nodiscard]] Status Sleep(transport::Micros micros) override { return local_.Sleep(micros); }
  [[nodiscard]] Status Await(const transport::Wakeup& wakeup, transport::Micros poll,
                             transport::Micros limit) override {
    return local_.Await(wakeup, poll, limit);
  }
  [[nodiscard]] StatusOr<transport::Response> Call(const transport::Address& to,
                                                   transport::Request request,
                                                   transport::Micros timeout) override;
  // To a node: one Shoal.Call on gRPC's callback API (no thread waits for the reply), or with
  // options.pipe one message of the node's Shoal.Pipe stream (grpc_pipe.h); `done` runs on a
  // gRPC thread (the pipe's queue thread), or on the calling thread when the request fails
  // before it is sent.
  // To the coordinator: the default (Call on a task), which follows the coordinator list.
  // Shutdown cancels the calls in flight and waits until their `done` returned; calls started
  // after it answer kCancelled at once. grpc_runtime_async.cc.
  void CallAsync(const transport::Address& to, transport::Request request,
                 transport::Micros timeout, CallDone done) override;
  // One Shoal.Scan RPC (the header's "Streams"); on_page runs on the calling thread.
  [[nodiscard]] Status StreamScan(
      const transport::Address& to, transport::ScanRequest request, transport::Micros timeout,
      const std::function<Status(transport::Response)>& on_page) override;
  void Spawn(const transport::Address& owner, std::string name, std::function<void()> fn) override {
    local_.Spawn(owner, std::move(name), std::move(fn));
  }
  void Serve(const transport::Address& self, std::shared_ptr<transport::Service> service) override {
    local_.Serve(self, std::move(service));
  }
  void Stop(const transport::Address& self) override { local_.Stop(self); }
  void RunAtLowerPriority(int nice_steps, const std::function<void()>& fn) override {
    local_.RunAtLowerPriority(nice_steps, fn);
  }
  [[nodiscard]] transport::Address Self() const override { return local_.Self(); }
  [[nodiscard]] bool Alive() const override { return local_.Alive(); }
  [[nodiscard]] uint64_t RandomU64() override { return local_.RandomU64(); }
  [[nodiscard]] Status Failpoint(std::string_view name) override { return local_.Failpoint(name); }

 private:
  class Handler;          // the gRPC sync service (grpc_runtime.cc)
  class CallbackHandler;  // the gRPC callback service (grpc_runtime.cc)
  struct Peer;            // a channel and its stub (grpc_runtime_internal.h)
  class ScanStream;       // the pages of one served stream (grpc_scan_stream.cc)
  class ScanReactor;      // a stream of the callback server (grpc_scan_stream.cc)
  struct AsyncCall;       // one CallAsync in flight (grpc_runtime_async.cc)

  explicit GrpcRuntime(const GrpcRuntimeOptions& options);
  [[nodiscard]] Status StartServer();
  // gRPC's message limit for the server and the channels.
  [[nodiscard]] int GrpcMessageLimit() const;
  // The envelope of `request` from this process to `to`; kResourceExhausted over the limit.
  [[nodiscard]] Status FillEnvelope(const transport::Address& to, const transport::Request& request,
                                    wire::Envelope* envelope) const;
  // Call's result for a reply `reply` that came with `status` from `to` at `host_port`.
  [[nodiscard]] StatusOr<transport::Response> Answer(const grpc::Status& status,
                                                     const wire::Response& reply,
                                                     const transport::Address& to,
                                                     std::string_view host_port,
                                                     std::string_view request_name);
  // Shutdown: cancels the async calls in flight and waits for their callbacks.
  void EndAsyncCalls();
  [[nodiscard]] Status FetchAddressBook();
  [[nodiscard]] Status FetchAddressBookFrom(const std::string& coordinator);
  // A call to `failed` (the coordinator address in use) did not get a definite answer: use the
  // next configured coordinator from now on.
  void NextCoordinator(const std::string& failed);
  // UNAVAILABLE naming the leader if this is a standby coordinator, else OK.
  [[nodiscard]] grpc::Status StandbyStatus() const;
  [[nodiscard]] std::shared_ptr<Peer> PeerFor(const std::string& host_port)
      ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] std::shared_ptr<Peer> PeerForLocked(const std::string& host_port)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The peer of `to`, resolving its address when it is not in the book.
  [[nodiscard]] StatusOr<std::shared_ptr<Peer>> PeerOf(const transport::Address& to);
  // After UNAVAILABLE from `who`: its address is resolved again next time (unless fixed).
  void Forget(const transport::Address& who);
  // After a call to `host_port` failed with `status`: if its channel could not connect, the
  // channel's reconnect backoff is reset, so that it connects again now rather than after the
  // backoff (docs/design/network.md, "Reconnecting").
  void ReconnectSoon(const std::string& host_port, const grpc::Status& status);
  void LoadAddressBook();
  void SaveAddressBookLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Serves one envelope (both server modes): learns the sender's address, then DispatchEnvelope
  // in local_ (envelope_dispatch.h).
  grpc::Status HandleEnvelope(const wire::Envelope& envelope,
                              std::chrono::system_clock::time_point deadline, wire::Response* out);
  // Serves one stream on the sync server (grpc_scan_stream.cc).
  grpc::Status ServeScan(grpc::ServerContext* context, const wire::Envelope& envelope,
                         grpc::ServerWriter<wire::Response>* writer);
  // Starts one stream of the callback server; the reactor deletes itself when done.
  grpc::ServerWriteReactor<wire::Response>* StartScan(grpc::CallbackServerContext* context,
                                                      const wire::Envelope& envelope);
  // Counts a new stream against StreamLimits::max_streams (RESOURCE_EXHAUSTED past it); a
  // stream admitted must be ended with EndStream.
  grpc::Status AdmitStream();
  void EndStream();
  // The header's "Authorization": OK if the caller of `context` may send a request needing
  // `access`, named `request` in errors; OK always without TLS.
  [[nodiscard]] grpc::Status Authorize(const grpc::ServerContextBase& context, RequestAccess access,
                                       std::string_view request);
  // Authorize after the revocation check (TlsCredentials::CheckNotRevoked), which the callers
  // run once per call.
  [[nodiscard]] grpc::Status AuthorizeCaller(const grpc::ServerContextBase& context,
                                             RequestAccess access, std::string_view request);
  // Authorize for an envelope's request (and CheckClusterSender for its sender).
  [[nodiscard]] grpc::Status AuthorizeEnvelope(const grpc::ServerContextBase& context,
                                               const wire::Envelope& envelope);
  grpc::Status HandleAdmin(const grpc::ServerContextBase& context,
                           const wire::AdminRequest& request, wire::AdminResponse* out);
  grpc::Status HandleResolve(wire::ResolveResponse* out) const;
  grpc::Status HandleWatchMap(const wire::WatchMapRequest& request,
                              const std::function<bool()>& cancelled, wire::WatchMapResponse* out);

  const GrpcRuntimeOptions options_;
  // The server's and the channels' credentials; set by Start before anything listens or dials.
  std::shared_ptr<const TlsCredentials> credentials_;
  security::Authenticator authenticator_;
  const std::vector<std::string> coordinators_;  // options_.coordinator, split at commas
  transport::ThreadRuntime local_;
  CallAdmission admission_;  // of Shoal.Call and Shoal.Pipe calls, both server modes
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<CallbackHandler> callback_handler_;
  // The handler threads of the callback server and of Pipe calls; outlives server_, whose
  // shutdown waits for them.
  std::unique_ptr<WorkerPool> workers_;
  std::unique_ptr<grpc::Server> server_;
  // Answers one PipeCall (either server mode); set before the server starts.
  std::function<void(const grpc::ServerContextBase&, const wire::PipeCall&, wire::PipeReply*)>
      pipe_handle_;
  std::unique_ptr<PipeServer> pipe_server_;  // serves Shoal.Pipe (the sync server)
  std::unique_ptr<PipeClient> pipe_client_;  // with options_.pipe
  std::string advertised_;

  mutable absl::Mutex mu_;
  std::map<transport::Address, std::string> book_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Peer>> peers_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<AdminHandler> admin_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<MapWatchHandler> map_watch_ ABSL_GUARDED_BY(mu_);
  size_t coordinator_index_ ABSL_GUARDED_BY(mu_) = 0;  // into coordinators_: the one in use
  bool standby_ ABSL_GUARDED_BY(mu_) = false;
  std::string leader_ ABSL_GUARDED_BY(mu_);  // the leader a standby knows of
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  StreamLimits stream_limits_ ABSL_GUARDED_BY(mu_);
  uint32_t open_streams_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<AsyncCall*> async_calls_ ABSL_GUARDED_BY(mu_);  // CallAsync calls in flight
  absl::CondVar async_idle_;                               // async_calls_ became empty
};

}  // namespace shoal::net
