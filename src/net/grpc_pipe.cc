// PipeServer and PipeClient (grpc_pipe.h).

#include "src/net/grpc_pipe.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <set>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "src/net/grpc_status.h"

namespace shoal::net {

using SystemClock = std::chrono::system_clock;

namespace {

// How often the client's queue thread looks for calls past their deadline.
constexpr auto kExpiryCheck = std::chrono::milliseconds(20);

}  // namespace

// ---- the server side -------------------------------------------------------------------------

namespace {

// The replies of one served stream: handed in by workers in any order, written one at a time,
// and the stream finished once the client is done sending, every handler has replied and every
// reply is written. `write` and `finish` are called under the queue's lock. Thread-safe.
class ReplyQueue {
 public:
  ReplyQueue(std::function<void(const wire::PipeReply*)> write, std::function<void()> finish)
      : write_(std::move(write)), finish_(std::move(finish)) {}

  // The stream's initial metadata is being sent (on accepting the stream, before any read): it
  // counts as the write in flight, so that no reply is written before it. Its completion is a
  // WriteDone like any reply's.
  void MetadataInFlight() {
    absl::MutexLock lock(&mu_);
    writing_ = true;
  }
  // A call was handed to a worker, which will Reply.
  void HandlerStarted() {
    absl::MutexLock lock(&mu_);
    ++handlers_;
  }
  void Reply(wire::PipeReply reply) {
    absl::MutexLock lock(&mu_);
    --handlers_;
    if (!broken_) {
      replies_.push_back(std::move(reply));
      if (!writing_) WriteNextLocked();
    }
    MaybeFinishLocked();
  }
  void WriteDone(bool ok) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {  // the client is gone: nothing more can be written
      broken_ = true;
      replies_.clear();
    } else if (!replies_.empty()) {
      WriteNextLocked();
    }
    MaybeFinishLocked();
  }
  // The client is done sending (or gone).
  void ReadsDone() {
    absl::MutexLock lock(&mu_);
    reads_done_ = true;
    MaybeFinishLocked();
  }

 private:
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    writing_ = true;
    writing_reply_ = std::move(replies_.front());
    replies_.pop_front();
    write_(&writing_reply_);
  }
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finishing_ || !reads_done_ || handlers_ > 0 || writing_ || !replies_.empty()) return;
    finishing_ = true;
    finish_();
  }

  const std::function<void(const wire::PipeReply*)> write_;
  const std::function<void()> finish_;
  absl::Mutex mu_;
  wire::PipeReply writing_reply_ ABSL_GUARDED_BY(mu_);
  std::deque<wire::PipeReply> replies_ ABSL_GUARDED_BY(mu_);
  int handlers_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
};

// Hands `call` of `peer` to a worker, whose reply goes to `replies`; or, past `admission`'s
// limits, replies at once. `context` outlives the handler: a stream ends only after every
// handler replied.
void Dispatch(const grpc::ServerContextBase* context, wire::PipeCall call,
              const PipeServer::Handle* handle, WorkerPool* workers, ReplyQueue* replies,
              CallAdmission* admission, const std::string& peer) {
  replies->HandlerStarted();
  auto ticket = admission->Admit(peer);
  if (!ticket.ok()) {
    wire::PipeReply reply;
    reply.set_id(call.id());
    reply.set_code(static_cast<int32_t>(grpc::StatusCode::RESOURCE_EXHAUSTED));
    reply.set_message(std::string(MessageOf(ticket.status())));
    replies->Reply(std::move(reply));
    return;
  }
  workers->Submit([context, call = std::move(call), handle, replies, ticket = *ticket] {
    wire::PipeReply reply;
    reply.set_id(call.id());
    (*handle)(*context, call, &reply);
    replies->Reply(std::move(reply));
  });
}

// One stream of the callback server.
class PipeReactor final : public grpc::ServerBidiReactor<wire::PipeCall, wire::PipeReply> {
 public:
  PipeReactor(const grpc::CallbackServerContext* context, const PipeServer::Handle* handle,
              WorkerPool* workers, CallAdmission* admission, std::string peer)
      : context_(context),
        handle_(handle),
        workers_(workers),
        admission_(admission),
        peer_(std::move(peer)),
        replies_([this](const wire::PipeReply* reply) { StartWrite(reply); },
                 [this] { Finish(grpc::Status::OK); }) {
    replies_.MetadataInFlight();
    StartSendInitialMetadata();
    StartRead(&call_);
  }

  // gRPC runs one OnReadDone at a time, so call_ needs no lock.
  void OnReadDone(bool ok) override {
    if (!ok) {
      replies_.ReadsDone();
      return;
    }
    wire::PipeCall call = std::move(call_);
    call_ = wire::PipeCall();
    StartRead(&call_);
    Dispatch(context_, std::move(call), handle_, workers_, &replies_, admission_, peer_);
  }
  void OnSendInitialMetadataDone(bool ok) override { replies_.WriteDone(ok); }
  void OnWriteDone(bool ok) override { replies_.WriteDone(ok); }
  void OnDone() override { delete this; }

 private:
  const grpc::CallbackServerContext* const context_;
  const PipeServer::Handle* const handle_;
  WorkerPool* const workers_;
  CallAdmission* const admission_;
  const std::string peer_;
  wire::PipeCall call_;  // the read in flight
  ReplyQueue replies_;
};

}  // namespace

grpc::ServerBidiReactor<wire::PipeCall, wire::PipeReply>* NewPipeReactor(
    const grpc::CallbackServerContext* context, const PipeServer::Handle* handle,
    WorkerPool* workers, CallAdmission* admission, std::string peer) {
  return new PipeReactor(context, handle, workers, admission, std::move(peer));
}

// One Pipe stream of the synchronous server's queue, from its accept to its Finish. The queue
// thread owns it and deletes it after its Finish; workers reach it only through its
// ReplyQueue, which cannot finish before every handler replied.
class PipeServer::Session {
 public:
  enum class Kind { kAccept, kRead, kWrite, kFinish };
  struct Tag {
    Session* session;
    Kind kind;
  };

  explicit Session(PipeServer* server)
      : server_(server),
        stream_(&context_),
        replies_([this](const wire::PipeReply* reply) { stream_.Write(*reply, &write_); },
                 [this] { stream_.Finish(grpc::Status::OK, &finish_); }) {
    server_->request_stream_(&context_, &stream_, server_->cq_.get(), &accept_);
  }

  // On the queue thread. True once the session has ended and may be deleted.
  bool OnEvent(Kind kind, bool ok) {
    switch (kind) {
      case Kind::kAccept:
        if (!ok) return true;  // the server is shutting down: no stream came
        // The client sends calls only once this arrives (PipeClient).
        peer_ = context_.peer();
        replies_.MetadataInFlight();
        stream_.SendInitialMetadata(&write_);
        stream_.Read(&call_, &read_);
        return false;
      case Kind::kRead: {
        if (!ok) {
          replies_.ReadsDone();
          return false;
        }
        wire::PipeCall call = std::move(call_);
        call_ = wire::PipeCall();
        stream_.Read(&call_, &read_);
        Dispatch(&context_, std::move(call), &server_->handle_, server_->workers_, &replies_,
                 server_->admission_, peer_);
        return false;
      }
      case Kind::kWrite:
        replies_.WriteDone(ok);
        return false;
      case Kind::kFinish:
        return true;
    }
    return false;
  }

 private:
  PipeServer* const server_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<wire::PipeReply, wire::PipeCall> stream_;
  Tag accept_{this, Kind::kAccept};
  Tag read_{this, Kind::kRead};
  Tag write_{this, Kind::kWrite};
  Tag finish_{this, Kind::kFinish};
  std::string peer_;     // set on accept (the queue thread's only)
  wire::PipeCall call_;  // the read in flight (the queue thread's only)
  ReplyQueue replies_;
};

PipeServer::PipeServer(std::unique_ptr<grpc::ServerCompletionQueue> cq,
                       RequestStream request_stream, Handle handle, WorkerPool* workers,
                       CallAdmission* admission)
    : cq_(std::move(cq)),
      request_stream_(std::move(request_stream)),
      handle_(std::move(handle)),
      workers_(workers),
      admission_(admission) {}

PipeServer::~PipeServer() { Shutdown(); }

void PipeServer::Start() {
  {
    absl::MutexLock lock(&mu_);
    AcceptNextLocked();
  }
  thread_ = std::thread([this] { Run(); });
}

void PipeServer::AcceptNextLocked() {
  if (accepting_) sessions_.insert(new Session(this));
}

void PipeServer::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

void PipeServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    absl::MutexLock lock(&mu_);
    accepting_ = false;
    draining_ = true;
  }
  cq_->Shutdown();
  if (thread_.joinable()) thread_.join();
}

void PipeServer::Run() {
  void* raw = nullptr;
  bool ok = false;
  while (cq_->Next(&raw, &ok)) {
    absl::MutexLock lock(&mu_);
    // gRPC aborts on an operation started on a queue that is shut down: from then on the
    // remaining events are only drained, and the sessions deleted below.
    if (draining_) continue;
    auto* tag = static_cast<Session::Tag*>(raw);
    Session* session = tag->session;
    // Each accepted stream asks for the next one.
    if (tag->kind == Session::Kind::kAccept && ok) AcceptNextLocked();
    if (session->OnEvent(tag->kind, ok)) {
      sessions_.erase(session);
      delete session;
    }
  }
  // The queue is drained: no event of any session is outstanding.
  absl::MutexLock lock(&mu_);
  for (Session* session : sessions_) delete session;
  sessions_.clear();
}

// ---- PipeClient ------------------------------------------------------------------------------

struct PipeClient::Tag {
  enum class Kind { kStart, kMetadata, kRead, kWrite, kFinish };
  Stream* stream;
  Kind kind;
};

struct PipeClient::Stream {
  explicit Stream(std::shared_ptr<wire::Shoal::Stub> stub_in) : stub(std::move(stub_in)) {}

  std::shared_ptr<wire::Shoal::Stub> stub;  // keeps the channel alive
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<wire::PipeCall, wire::PipeReply>> rw;
  Tag start{this, Tag::Kind::kStart};
  Tag metadata{this, Tag::Kind::kMetadata};
  Tag read{this, Tag::Kind::kRead};
  Tag write{this, Tag::Kind::kWrite};
  Tag finish{this, Tag::Kind::kFinish};
  wire::PipeReply reply;        // the read in flight
  wire::PipeCall writing_call;  // the write in flight
  grpc::Status finish_status;
  std::deque<wire::PipeCall> unsent;
  std::map<uint64_t, Pending> pending;  // every call not yet ended, written or not
  int outstanding = 0;                  // operations whose tag has not come back
  bool open = false;  // the server's initial metadata arrived: calls may be written
  bool writing = false;
  bool reads_done = false;  // the stream failed or ended: Finish once no write is in flight
  bool finishing = false;
  bool failed = false;  // Finish came back: its calls are ended
};

PipeClient::PipeClient(ServerCheck check, Prepare prepare)
    : check_(std::move(check)), prepare_(std::move(prepare)), thread_([this] { Run(); }) {}

PipeClient::~PipeClient() { Shutdown(); }

void PipeClient::Call(std::shared_ptr<wire::Shoal::Stub> stub, wire::Envelope envelope,
                      SystemClock::time_point deadline, Done done) {
  absl::ReleasableMutexLock lock(&mu_);
  if (shut_down_) {
    lock.Release();
    done(grpc::Status(grpc::StatusCode::CANCELLED, "pipe shut down"), wire::Response());
    return;
  }
  Stream*& stream = streams_[stub.get()];
  if (stream == nullptr) {
    auto owned = std::make_unique<Stream>(stub);
    stream = owned.get();
    prepare_(&stream->context);
    stream->rw = stub->PrepareAsyncPipe(&stream->context, &cq_);
    ++stream->outstanding;
    stream->rw->StartCall(&stream->start);
    owned_[stream] = std::move(owned);
  }
  const uint64_t id = next_id_++;
  wire::PipeCall call;
  call.set_id(id);
  *call.mutable_envelope() = std::move(envelope);
  const auto timeout =
      std::chrono::duration_cast<std::chrono::microseconds>(deadline - SystemClock::now());
  call.set_timeout_micros(static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 1)));
  stream->pending.emplace(id, Pending{.done = std::move(done), .deadline = deadline});
  stream->unsent.push_back(std::move(call));
  if (stream->open && !stream->writing && !stream->reads_done) WriteNextLocked(stream);
}

void PipeClient::WriteNextLocked(Stream* stream) {
  while (!stream->unsent.empty()) {
    wire::PipeCall call = std::move(stream->unsent.front());
    stream->unsent.pop_front();
    auto it = stream->pending.find(call.id());
    if (it == stream->pending.end()) continue;  // ended by its deadline before it was sent
    it->second.written = true;
    stream->writing_call = std::move(call);
    stream->writing = true;
    ++stream->outstanding;
    stream->rw->Write(stream->writing_call, &stream->write);
    return;
  }
}

void PipeClient::OnEvent(Tag* tag, bool ok, std::vector<Completion>* completions) {
  Stream* stream = tag->stream;
  --stream->outstanding;
  switch (tag->kind) {
    case Tag::Kind::kStart:
      // No call is written before the server has accepted the stream (its initial metadata):
      // a stream that fails before then, on a connection that was dying when the stream
      // started, carried nothing the server could have handled.
      if (ok) {
        ++stream->outstanding;
        stream->rw->ReadInitialMetadata(&stream->metadata);
      } else {
        stream->reads_done = true;
      }
      break;
    case Tag::Kind::kMetadata:
      if (ok) {
        stream->open = true;
        ++stream->outstanding;
        stream->rw->Read(&stream->reply, &stream->read);
        if (!stream->writing) WriteNextLocked(stream);
      } else {
        stream->reads_done = true;
      }
      break;
    case Tag::Kind::kRead:
      if (ok) {
        auto it = stream->pending.find(stream->reply.id());
        if (it != stream->pending.end()) {  // else ended by its deadline: dropped
          completions->push_back(
              [done = std::move(it->second.done),
               status = check_(stream->context,
                               grpc::Status(static_cast<grpc::StatusCode>(stream->reply.code()),
                                            stream->reply.message(), stream->reply.details())),
               response = std::move(*stream->reply.mutable_response())] {
                done(status, response);
              });
          stream->pending.erase(it);
        }
        stream->reply.Clear();
        ++stream->outstanding;
        stream->rw->Read(&stream->reply, &stream->read);
      } else {
        stream->reads_done = true;
      }
      break;
    case Tag::Kind::kWrite:
      stream->writing = false;
      if (ok && !stream->reads_done) WriteNextLocked(stream);
      break;
    case Tag::Kind::kFinish:
      FailLocked(stream, stream->finish_status, completions);
      break;
  }
  // A stream that failed leaves the map at once (the next call opens a new one) and is
  // finished once no write of it is in flight.
  if (stream->reads_done) {
    auto it = streams_.find(stream->stub.get());
    if (it != streams_.end() && it->second == stream) streams_.erase(it);
    if (!stream->finishing && !stream->writing) {
      stream->finishing = true;
      ++stream->outstanding;
      stream->rw->Finish(&stream->finish_status, &stream->finish);
    }
  }
  MaybeDeleteLocked(stream);
}

void PipeClient::FailLocked(Stream* stream, const grpc::Status& status,
                            std::vector<Completion>* completions) {
  stream->failed = true;
  const bool cancelled = status.error_code() == grpc::StatusCode::CANCELLED;
  for (auto& [id, pending] : stream->pending) {
    grpc::Status result;
    if (cancelled) {
      result = grpc::Status(grpc::StatusCode::CANCELLED, "pipe cancelled");
    } else if (pending.written) {
      // Sent, unanswered: it may have been handled. UNAVAILABLE without NotHandled's mark, as a
      // unary call whose connection broke: the caller learns kDeadlineExceeded and forgets the
      // address.
      result = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("pipe ended before the reply: {}", status.error_message()));
    } else {
      result = NotHandled(fmt::format("pipe failed: {}", status.error_message()));
    }
    completions->push_back(
        [done = std::move(pending.done), result] { done(result, wire::Response()); });
  }
  stream->pending.clear();
  stream->unsent.clear();
}

void PipeClient::ExpireLocked(SystemClock::time_point now, std::vector<Completion>* completions) {
  for (auto& [stream, owned] : owned_) {
    for (auto it = stream->pending.begin(); it != stream->pending.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      completions->push_back([done = std::move(it->second.done)] {
        done(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
             wire::Response());
      });
      it = stream->pending.erase(it);
    }
  }
}

void PipeClient::MaybeDeleteLocked(Stream* stream) {
  if (!stream->failed || stream->outstanding > 0) return;
  owned_.erase(stream);
  if (owned_.empty()) idle_.SignalAll();
}

void PipeClient::Run() {
  while (true) {
    void* raw = nullptr;
    bool ok = false;
    const auto next = cq_.AsyncNext(&raw, &ok, SystemClock::now() + kExpiryCheck);
    if (next == grpc::CompletionQueue::SHUTDOWN) return;
    std::vector<Completion> completions;
    {
      absl::MutexLock lock(&mu_);
      if (next == grpc::CompletionQueue::GOT_EVENT) {
        OnEvent(static_cast<Tag*>(raw), ok, &completions);
      }
      const auto now = SystemClock::now();
      if (now >= next_expiry_check_) {
        next_expiry_check_ = now + kExpiryCheck;
        ExpireLocked(now, &completions);
      }
    }
    for (Completion& completion : completions) completion();
  }
}

void PipeClient::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (!shut_down_) {
      shut_down_ = true;
      for (auto& [stream, owned] : owned_) stream->context.TryCancel();
    }
    while (!owned_.empty()) idle_.Wait(&mu_);
  }
  if (!thread_.joinable()) return;  // shut down before
  cq_.Shutdown();
  thread_.join();
}

}  // namespace shoal::net
