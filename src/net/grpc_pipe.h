#pragma once

// The pipe (docs/design/network.md, "Pipe"): a client's data calls to one server as messages of
// one bidirectional stream (Shoal.Pipe) instead of one RPC each. With no work around it, a
// unary call costs each side about twice the CPU of a stream message; in Shoal the pipe lifts
// put throughput by about 15% and get by about 4% (docs/results/network.md, "A stream instead
// of a call"). Off by default (GrpcRuntimeOptions::pipe).
//
// On the server, each PipeCall is handed to a WorkerPool thread (a Shoal handler may block: a
// write queued behind a fence, a map refresh, a read forwarded to a source), and the replies are
// written in the order the handlers finish. The synchronous server (the default) serves every
// Pipe stream on one completion-queue thread that only reads and writes (PipeServer); the
// callback server, whose service cannot also have a completion-queue method, serves each with
// a reactor (NewPipeReactor). Both send the stream's initial metadata as soon as they accept
// it. A stream ends once the client is done sending and every reply has been written.
//
// PipeClient keeps one stream per server (per channel), opened at its first call, and drives all
// of them from one completion-queue thread. Invariants:
//   - every call's `done` runs exactly once, on the client's queue thread (or on the caller's
//     thread when the client is shut down), and never under the client's lock;
//   - no call is written before the server's initial metadata arrived, so a stream that fails
//     before the server accepted it (a connection dying as the stream started) carried nothing
//     the server could have handled;
//   - a call not yet written when its stream fails gets NotHandled's UNAVAILABLE (certainly not
//     handled, as a unary call whose connection was refused); a written call whose reply did
//     not come gets a plain UNAVAILABLE when its stream fails (possibly handled, as a unary
//     call whose connection broke: grpc_status.h) and DEADLINE_EXCEEDED when its deadline
//     passes;
//   - a reply for a call already ended (its deadline passed) is dropped;
//   - a failed stream is forgotten at once: the next call opens a new one.
//
// Thread-safety: every method is thread-safe. Shutdown must not be called from `done`.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/shoal.grpc.pb.h"
#include "src/net/call_admission.h"
#include "src/net/worker_pool.h"

namespace shoal::net {

// What a PipeCall adds to its Envelope, and a PipeReply to its Response, at most when
// serialized (id, timeout, status code; the status message and details are empty when there is
// a response).
inline constexpr size_t kPipeFramingBytes = 64;

class PipeServer {
 public:
  // Asks gRPC for the next Pipe stream of the server (AsyncService::RequestPipe).
  using RequestStream = std::function<void(
      grpc::ServerContext*, grpc::ServerAsyncReaderWriter<wire::PipeReply, wire::PipeCall>*,
      grpc::ServerCompletionQueue*, void* tag)>;
  // Answers one call on a worker thread; `context` is its stream's (who the caller is).
  using Handle = std::function<void(const grpc::ServerContextBase& context, const wire::PipeCall&,
                                    wire::PipeReply*)>;

  // `cq` comes from the server's builder; `workers` and `admission` outlive this. Every call is
  // counted by `admission` against its stream's peer before it is queued for a worker, and held
  // until answered; a call refused there is answered at once with RESOURCE_EXHAUSTED.
  PipeServer(std::unique_ptr<grpc::ServerCompletionQueue> cq, RequestStream request_stream,
             Handle handle, WorkerPool* workers, CallAdmission* admission);
  ~PipeServer();
  PipeServer(const PipeServer&) = delete;
  PipeServer& operator=(const PipeServer&) = delete;

  // Asks for the first stream and starts the queue thread (once the server is built).
  void Start();
  // Before the server's Shutdown: asks for no more streams (gRPC aborts on a request to a server
  // that is shutting down; one made before is ended by the Shutdown).
  void StopAccepting();
  // After the server's Shutdown and after the workers finished: drains the queue, joins.
  void Shutdown();

 private:
  class Session;
  void Run();
  // Asks gRPC for the next stream, unless StopAccepting was called.
  void AcceptNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  const RequestStream request_stream_;
  const Handle handle_;
  WorkerPool* const workers_;
  CallAdmission* const admission_;
  std::thread thread_;
  bool shut_down_ = false;
  // Guards the three below; held while the queue thread handles an event (so that nothing is
  // started on the queue once it is shut down) and while a stream is requested.
  absl::Mutex mu_;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;  // the queue is shut down: events are only drained
  std::set<Session*> sessions_ ABSL_GUARDED_BY(mu_);  // every session not yet ended
};

// One Pipe stream of the callback server from `peer` (ServerContext::peer()); it deletes itself
// when done. `handle`, `workers` and `admission` outlive it; calls are admitted as PipeServer's.
[[nodiscard]] grpc::ServerBidiReactor<wire::PipeCall, wire::PipeReply>* NewPipeReactor(
    const grpc::CallbackServerContext* context, const PipeServer::Handle* handle,
    WorkerPool* workers, CallAdmission* admission, std::string peer);

class PipeClient {
 public:
  // The call's gRPC status and, when OK, its response.
  using Done = std::function<void(const grpc::Status&, const wire::Response&)>;
  // Judges each answer by its stream's context: its argument back, or an error that replaces
  // it (the runtime's check of the server's certificate, CheckServer).
  using ServerCheck = std::function<grpc::Status(const grpc::ClientContext&, grpc::Status)>;
  // Prepares each stream's context before it opens (the runtime's login metadata).
  using Prepare = std::function<void(grpc::ClientContext*)>;

  PipeClient(ServerCheck check, Prepare prepare);
  ~PipeClient();
  PipeClient(const PipeClient&) = delete;
  PipeClient& operator=(const PipeClient&) = delete;

  // Sends `envelope` on the stream of `stub` (one per stub: a server's channel; opened if there
  // is none); `done` runs once with the answer, or with an error by `deadline`.
  void Call(std::shared_ptr<wire::Shoal::Stub> stub, wire::Envelope envelope,
            std::chrono::system_clock::time_point deadline, Done done);
  // Cancels every stream, ends every call (CANCELLED), joins the queue thread. Idempotent.
  void Shutdown();

 private:
  struct Stream;
  struct Tag;
  struct Pending {
    Done done;
    std::chrono::system_clock::time_point deadline;
    bool written = false;
  };
  // A `done` to run once the lock is released.
  using Completion = std::function<void()>;

  void Run();
  // Handles one event of `stream`; appends the completions to run.
  void OnEvent(Tag* tag, bool ok, std::vector<Completion>* completions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteNextLocked(Stream* stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stream ended (its Finish status known): ends its calls, forgets it.
  void FailLocked(Stream* stream, const grpc::Status& status, std::vector<Completion>* completions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireLocked(std::chrono::system_clock::time_point now, std::vector<Completion>* completions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes `stream` once it is failed and no operation of it is outstanding.
  void MaybeDeleteLocked(Stream* stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ServerCheck check_;
  const Prepare prepare_;
  grpc::CompletionQueue cq_;
  // Guards everything below, and the fields of the streams.
  absl::Mutex mu_;
  absl::CondVar idle_;  // owned_ became empty
  // Open or opening, by stub.
  std::map<const wire::Shoal::Stub*, Stream*> streams_ ABSL_GUARDED_BY(mu_);
  // Every stream not yet deleted.
  std::map<Stream*, std::unique_ptr<Stream>> owned_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::chrono::system_clock::time_point next_expiry_check_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shoal::net
