// GrpcRuntime's streamed scans (Shoal.Scan): the server side in both server modes and the client
// side (StreamScan). Invariants and limits: grpc_runtime.h ("Streams"), docs/design/network.md.

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <utility>

#include "src/net/grpc_runtime.h"
#include "src/net/grpc_runtime_internal.h"
#include "src/net/wire_codec.h"

namespace shoal::net {

using transport::Address;
using transport::Micros;

// The pages of one served stream, computed one at a time by Next. Not thread-safe: the sync
// server calls it from the stream's thread, the callback reactor from one pool task at a time.
class GrpcRuntime::ScanStream {
 public:
  // `deadline`: the client's; the stream also ends at StreamLimits::max_duration.
  ScanStream(GrpcRuntime* runtime, std::chrono::system_clock::time_point deadline)
      : runtime_(runtime),
        limits_(runtime->stream_limits()),
        deadline_(std::min(deadline, DeadlineAfter(limits_.max_duration))) {}

  // Decodes and checks the request; a non-OK status ends the stream before any page.
  grpc::Status Start(const wire::Envelope& envelope) {
    auto from = FromWire(envelope.from());
    auto to = FromWire(envelope.to());
    if (!from.ok() || !to.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed envelope address");
    }
    auto request = FromWire(envelope.request());
    if (!request.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          std::string(MessageOf(request.status())));
    }
    auto* scan = std::get_if<transport::ScanRequest>(&*request);
    if (scan == nullptr) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a stream carries a ScanRequest");
    }
    if (Status valid = transport::ValidateScan(*scan); !valid.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(MessageOf(valid)));
    }
    if (scan->max_documents > limits_.max_documents) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          fmt::format("{} documents per streamed message; the limit is {} "
                                      "(docs/limits.md)",
                                      scan->max_documents, limits_.max_documents));
    }
    // A client's smaller bound is kept; none or a larger one becomes the server's.
    if (scan->max_bytes == 0 || scan->max_bytes > limits_.max_bytes) {
      scan->max_bytes = limits_.max_bytes;
    }
    from_ = *from;
    to_ = *to;
    request_ = std::move(*scan);
    return grpc::Status::OK;
  }

  // The next message into *out (true), or the stream's final status (false). `cancelled` is
  // polled between pages.
  bool Next(const std::atomic<bool>& cancelled, wire::Response* out, grpc::Status* final) {
    out->Clear();
    while (true) {
      if (done_) {
        *final = grpc::Status::OK;
        return false;
      }
      if (cancelled.load()) {
        *final = grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled");
        return false;
      }
      const Micros left = TimeoutUntil(deadline_);
      if (left <= 0) {
        *final = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                              "scan stream deadline passed (the client resumes from its cursor)");
        return false;
      }
      StatusOr<transport::Response> response;
      {
        transport::ThreadRuntime::ScopedActor actor(runtime_->local_, from_);
        response = runtime_->local_.Call(to_, request_, left);
      }
      if (!response.ok()) {
        std::string message(MessageOf(response.status()));
        *final = response.status().code() == StatusCode::kUnavailable
                     ? NotHandled(std::move(message))
                     : grpc::Status(grpc::StatusCode::ABORTED, message);
        return false;
      }
      auto* page = std::get_if<transport::ScanResponse>(&response->body);
      if (!response->status.ok() || page == nullptr) {
        done_ = true;  // an error page is the last message
      } else {
        request_.cursor = page->next_cursor;
        done_ = page->next_cursor.empty();
        // A page the filter left empty is not worth a message: scan on.
        if (page->documents.empty() && !done_) continue;
      }
      ToWire(*response, out);
      const size_t bytes = out->ByteSizeLong();
      if (bytes > runtime_->options_.max_message_bytes) {
        out->Clear();
        ToWire(transport::Response::Error(ResourceExhaustedError(
                   fmt::format("streamed page of {} bytes exceeds the limit of {} bytes", bytes,
                               runtime_->options_.max_message_bytes))),
               out);
        done_ = true;
      }
      return true;
    }
  }

 private:
  GrpcRuntime* const runtime_;
  const StreamLimits limits_;
  const std::chrono::system_clock::time_point deadline_;
  Address from_{};
  Address to_{};
  transport::ScanRequest request_{};
  bool done_ = false;
};

// One stream of the callback server. Exactly one of {a pool task computing the next page, a
// write in flight} exists at a time, so the reactor never runs ahead of the transport; OnDone
// (after Finish and every callback) releases the stream's slot and deletes the reactor.
class GrpcRuntime::ScanReactor final : public grpc::ServerWriteReactor<wire::Response> {
 public:
  ScanReactor(GrpcRuntime* runtime, grpc::CallbackServerContext* context,
              const wire::Envelope& envelope)
      : runtime_(runtime), stream_(runtime, context->deadline()) {
    grpc::Status status = runtime_->AuthorizeEnvelope(*context, envelope);
    if (status.ok()) {
      status = runtime_->AdmitStream();
      admitted_ = status.ok();
    }
    if (status.ok()) status = stream_.Start(envelope);
    if (!status.ok()) {
      Finish(status);
      return;
    }
    Step();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    Step();
  }
  void OnCancel() override { cancelled_ = true; }
  void OnDone() override {
    if (admitted_) runtime_->EndStream();
    delete this;
  }

 private:
  // Computes the next page on a pool thread (a handler may block), then writes it or finishes.
  void Step() {
    runtime_->workers_->Submit([this] {
      grpc::Status final;
      if (stream_.Next(cancelled_, &message_, &final)) {
        StartWrite(&message_);
      } else {
        Finish(final);
      }
    });
  }

  GrpcRuntime* const runtime_;
  ScanStream stream_;
  bool admitted_ = false;
  std::atomic<bool> cancelled_{false};
  wire::Response message_;  // the write in flight
};

grpc::Status GrpcRuntime::AdmitStream() {
  absl::MutexLock lock(&mu_);
  if (open_streams_ >= stream_limits_.max_streams) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        fmt::format("this server already serves {} streams; the limit is {} "
                                    "(docs/limits.md)",
                                    open_streams_, stream_limits_.max_streams));
  }
  ++open_streams_;
  return grpc::Status::OK;
}

void GrpcRuntime::EndStream() {
  absl::MutexLock lock(&mu_);
  --open_streams_;
}

Status GrpcRuntime::SetStreamLimits(const StreamLimits& limits) {
  if (limits.max_documents == 0 || limits.max_bytes == 0 || limits.max_streams == 0 ||
      limits.max_duration <= 0) {
    return InvalidArgumentError("every stream limit must be at least 1");
  }
  absl::MutexLock lock(&mu_);
  stream_limits_ = limits;
  return OkStatus();
}

StreamLimits GrpcRuntime::stream_limits() const {
  absl::MutexLock lock(&mu_);
  return stream_limits_;
}

grpc::Status GrpcRuntime::ServeScan(grpc::ServerContext* context, const wire::Envelope& envelope,
                                    grpc::ServerWriter<wire::Response>* writer) {
  if (grpc::Status allowed = AuthorizeEnvelope(*context, envelope); !allowed.ok()) return allowed;
  if (grpc::Status admitted = AdmitStream(); !admitted.ok()) return admitted;
  struct Slot {
    GrpcRuntime* runtime;
    ~Slot() { runtime->EndStream(); }
  } slot{this};
  ScanStream stream(this, context->deadline());
  if (grpc::Status started = stream.Start(envelope); !started.ok()) return started;
  std::atomic<bool> cancelled{false};
  wire::Response message;
  grpc::Status final;
  while (true) {
    cancelled = context->IsCancelled();
    if (!stream.Next(cancelled, &message, &final)) return final;
    // Blocks while the transport holds what flow control lets it: the back-pressure.
    if (!writer->Write(message)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
  }
}

grpc::ServerWriteReactor<wire::Response>* GrpcRuntime::StartScan(
    grpc::CallbackServerContext* context, const wire::Envelope& envelope) {
  return new ScanReactor(this, context, envelope);
}

Status GrpcRuntime::StreamScan(const Address& to, transport::ScanRequest request, Micros timeout,
                               const std::function<Status(transport::Response)>& on_page) {
  if (!Alive()) return CancelledError("process stopped");
  wire::Envelope envelope;
  const Address self = Self();
  ToWire(self, envelope.mutable_from());
  ToWire(to, envelope.mutable_to());
  if (self.kind != Address::Kind::kClient) envelope.set_from_listen(advertised_);
  ToWire(transport::Request(std::move(request)), envelope.mutable_request());
  const std::string what = fmt::format("scan stream to {}", to.DebugString());
  if (const size_t bytes = envelope.ByteSizeLong(); bytes > options_.max_message_bytes) {
    return ResourceExhaustedError(
        fmt::format("{}: request of {} bytes exceeds the limit of {} bytes (docs/limits.md)", what,
                    bytes, options_.max_message_bytes));
  }
  auto peer = PeerOf(to);
  if (!peer.ok()) return Prefixed(peer.status(), what);
  grpc::ClientContext context;
  PrepareCall(*credentials_, &context, DeadlineAfter(timeout));
  auto reader = (*peer)->stub->Scan(&context, envelope);
  wire::Response reply;
  Status stopped;  // why this side ended the stream early
  while (reader->Read(&reply)) {
    auto response = FromWire(reply);
    if (grpc::Status server = CheckServer(*credentials_, context, grpc::Status::OK); !server.ok()) {
      stopped = FromGrpc(server, what);
    } else if (!response.ok()) {
      stopped = InternalError(
          fmt::format("{}: undecodable page: {}", what, std::string(MessageOf(response.status()))));
    } else if (Status accepted = on_page(*std::move(response)); !accepted.ok()) {
      stopped = std::move(accepted);
    } else if (!Alive()) {
      stopped = CancelledError("process stopped");
    }
    if (!stopped.ok()) {
      context.TryCancel();
      while (reader->Read(&reply)) {
      }
      break;
    }
  }
  const grpc::Status status = reader->Finish();
  if (!stopped.ok()) return stopped;
  if (!status.ok()) {
    ReconnectSoon((*peer)->host_port, status);
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) Forget(to);
    return FromGrpc(status, what);
  }
  return OkStatus();
}

}  // namespace shoal::net
