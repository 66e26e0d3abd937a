// GrpcRuntime::CallAsync: a unary Shoal.Call on gRPC's callback API (grpc_runtime.h).

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <utility>

#include "proto/shoal.grpc.pb.h"
#include "src/net/grpc_pipe.h"
#include "src/net/grpc_runtime.h"
#include "src/net/grpc_runtime_internal.h"

namespace shoal::net {

using transport::Address;
using transport::Micros;

// Everything a call in flight needs until its callback ran: gRPC holds pointers to the context,
// the request and the reply until then.
struct GrpcRuntime::AsyncCall {
  // First, so that it goes last: the context and the call must end before their channel.
  std::shared_ptr<Peer> peer;  // keeps the channel and the stub alive
  grpc::ClientContext context;
  wire::Envelope envelope;
  wire::Response reply;
  Address to;
  std::string request_name;
  CallDone done;
};

void GrpcRuntime::CallAsync(const Address& to, transport::Request request, Micros timeout,
                            CallDone done) {
  if (to.kind != Address::Kind::kNode) {
    // Calls to the coordinator follow the list of coordinators (Call): not on the data path.
    Runtime::CallAsync(to, std::move(request), timeout, std::move(done));
    return;
  }
  if (!Alive()) {
    done(CancelledError("process stopped"));
    return;
  }
  auto call = std::make_unique<AsyncCall>();
  call->to = to;
  call->request_name = std::string(RequestName(request));
  if (Status status = FillEnvelope(to, request, &call->envelope); !status.ok()) {
    done(std::move(status));
    return;
  }
  // An address not in the book is asked of the coordinator here, on the calling thread (once
  // per node, within kResolveTimeout); every later call finds it in the book.
  auto peer = PeerOf(to);
  if (!peer.ok()) {
    done(Prefixed(peer.status(), call->request_name));
    return;
  }
  if (pipe_client_ != nullptr) {
    // On the node's pipe (grpc_pipe.h): the stub, aliased to its peer, keeps the channel alive.
    std::shared_ptr<Peer> owner = *std::move(peer);
    std::shared_ptr<wire::Shoal::Stub> stub(owner, owner->stub.get());
    pipe_client_->Call(
        std::move(stub), std::move(call->envelope), DeadlineAfter(timeout),
        [this, to, owner, name = std::move(call->request_name), done = std::move(done)](
            const grpc::Status& status, const wire::Response& reply) {
          done(local_.Alive() ? Answer(status, reply, to, owner->host_port, name)
                              : StatusOr<transport::Response>(CancelledError("process stopped")));
        });
    return;
  }
  call->peer = *std::move(peer);
  call->done = std::move(done);
  PrepareCall(*credentials_, &call->context, DeadlineAfter(timeout));
  {
    absl::MutexLock lock(&mu_);
    if (!shut_down_) {
      async_calls_.insert(call.get());
    } else {
      call->peer = nullptr;
    }
  }
  if (call->peer == nullptr) {
    call->done(CancelledError("process stopped"));
    return;
  }
  AsyncCall* raw = call.release();
  raw->peer->stub->async()->Call(
      &raw->context, &raw->envelope, &raw->reply, [this, raw](grpc::Status status) {
        std::unique_ptr<AsyncCall> owned(raw);
        status = CheckServer(*credentials_, owned->context, std::move(status));
        StatusOr<transport::Response> result =
            local_.Alive() ? Answer(status, owned->reply, owned->to, owned->peer->host_port,
                                    owned->request_name)
                           : StatusOr<transport::Response>(CancelledError("process stopped"));
        owned->done(std::move(result));
        absl::MutexLock lock(&mu_);
        async_calls_.erase(raw);
        // Ended under the lock, while the runtime (whose book holds the channel too) still
        // lives: Shutdown cannot return, and the runtime cannot go, before this.
        owned.reset();
        if (async_calls_.empty()) async_idle_.SignalAll();
        // Nothing of the runtime is touched after the lock is released: Shutdown may end it.
      });
}

void GrpcRuntime::EndAsyncCalls() {
  absl::MutexLock lock(&mu_);
  for (AsyncCall* call : async_calls_) call->context.TryCancel();
  while (!async_calls_.empty()) async_idle_.Wait(&mu_);
}

}  // namespace shoal::net
