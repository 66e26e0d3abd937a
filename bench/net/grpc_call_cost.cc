// grpc_call_cost: what one exchange costs in CPU on each side of a gRPC connection over loopback,
// by the way it is made, with no Shoal code around it: an echo of a request of K KiB (K
// operations of 1 KiB, as a Shoal batch call carries them) answered with 64 bytes, D exchanges in
// flight. The server is a child process (this program run with --serve); each side's CPU time is
// read from /proc/PID/stat around the measured window. docs/results/network.md, "A stream
// instead of a call".
//
// Ways (--ways, each as WAY/DEPTH/KIB):
//   unary            Shoal's Call: the synchronous gRPC server, a unary call on the
//                    client's callback API, the caller waiting for the completions.
//   stream-callback  one bidirectional stream on gRPC's callback API on both sides (reactors).
//   stream-handoff   one stream on the completion-queue API; the server's queue thread hands each
//                    message to a worker thread, which answers (a Shoal handler may block, so it
//                    may not run on the thread that serves every stream); the client's queue
//                    thread completes the caller's exchanges.
//   stream-inline    one stream on the completion-queue API, answered on the server's queue
//                    thread, and driven on the client by the caller's own thread: no thread
//                    hand-off on either side.
//
//   grpc_call_cost --rounds 3 --seconds 3 --ways unary/1/16,stream-inline/16/1

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/net/call_cost.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
using shoal::bench::Echo;
using shoal::bench::EchoReply;
using shoal::bench::EchoRequest;

constexpr size_t kReplyBytes = 64;

// Completion-queue tags of the stream loops.
void* const kTagStart = reinterpret_cast<void*>(1);
void* const kTagRead = reinterpret_cast<void*>(2);
void* const kTagWrite = reinterpret_cast<void*>(3);
void* const kTagFinish = reinterpret_cast<void*>(4);

EchoReply ReplyTo(uint64_t id) {
  EchoReply reply;
  reply.set_id(id);
  reply.set_payload(std::string(kReplyBytes, 'r'));
  return reply;
}

// utime + stime of every thread of process `pid`, in seconds.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream file(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // from field 3 (state) on
  std::string field;
  long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stol(field);
  }
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ---- the server side -------------------------------------------------------------------------

// One stream of the callback server: each message answered on the reactor's thread.
class EchoPipeReactor final : public grpc::ServerBidiReactor<EchoRequest, EchoReply> {
 public:
  EchoPipeReactor() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ok) {
      reads_done_ = true;
      if (!writing_) Finish(grpc::Status::OK);
      return;
    }
    Queue(ReplyTo(request_.id()));
    StartRead(&request_);
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok || (pending_.empty() && reads_done_)) {
      Finish(grpc::Status::OK);
      return;
    }
    if (!pending_.empty()) WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void Queue(EchoReply reply) {  // mu_ held
    pending_.push_back(std::move(reply));
    if (!writing_) WriteNext();
  }
  void WriteNext() {  // mu_ held
    writing_ = true;
    writing_reply_ = std::move(pending_.front());
    pending_.pop_front();
    StartWrite(&writing_reply_);
  }

  std::mutex mu_;
  EchoRequest request_;
  EchoReply writing_reply_;
  std::deque<EchoReply> pending_;
  bool writing_ = false;
  bool reads_done_ = false;
};

// Unary on the synchronous server (as Shoal's node), Pipe on the callback API.
class SyncEchoService final : public Echo::WithCallbackMethod_Pipe<Echo::Service> {
  grpc::Status Unary(grpc::ServerContext*, const EchoRequest* request, EchoReply* reply) override {
    *reply = ReplyTo(request->id());
    return grpc::Status::OK;
  }
  grpc::ServerBidiReactor<EchoRequest, EchoReply>* Pipe(grpc::CallbackServerContext*) override {
    return new EchoPipeReactor();
  }
};

// A thread that runs the functions handed to it, in order.
class Worker {
 public:
  Worker() : thread_([this] { Run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Submit(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// Serves one stream after another on the completion-queue API, on this thread; with `handoff`
// each message is answered by a worker thread instead.
[[noreturn]] void ServeQueueStreams(Echo::AsyncService* service, grpc::ServerCompletionQueue* cq,
                                    bool handoff) {
  Worker worker;
  while (true) {
    grpc::ServerContext context;
    grpc::ServerAsyncReaderWriter<EchoReply, EchoRequest> stream(&context);
    void* tag = nullptr;
    bool ok = false;
    service->RequestPipe(&context, &stream, cq, cq, kTagStart);
    if (!cq->Next(&tag, &ok)) std::_Exit(1);
    EchoRequest request;
    std::mutex mu;  // guards the three below (the worker answers while this thread reads)
    EchoReply writing_reply;
    std::deque<EchoReply> pending;
    bool writing = false;
    auto answer = [&](EchoReply reply) {
      std::lock_guard<std::mutex> lock(mu);
      if (writing) {
        pending.push_back(std::move(reply));
        return;
      }
      writing = true;
      writing_reply = std::move(reply);
      stream.Write(writing_reply, kTagWrite);
    };
    stream.Read(&request, kTagRead);
    while (cq->Next(&tag, &ok)) {
      if (tag == kTagRead) {
        if (!ok) break;  // the client is done: every answer it waited for was written
        const uint64_t id = request.id();
        if (handoff) {
          worker.Submit([&answer, id] { answer(ReplyTo(id)); });
        } else {
          answer(ReplyTo(id));
        }
        stream.Read(&request, kTagRead);
      } else if (tag == kTagWrite) {
        std::lock_guard<std::mutex> lock(mu);
        writing = false;
        if (ok && !pending.empty()) {
          writing = true;
          writing_reply = std::move(pending.front());
          pending.pop_front();
          stream.Write(writing_reply, kTagWrite);
        }
      }
    }
    stream.Finish(grpc::Status::OK, kTagFinish);
    while (cq->Next(&tag, &ok) && tag != kTagFinish) {
    }
  }
}

// The child process: serves `way` on a loopback port, writes the port to stdout, never returns.
[[noreturn]] void Serve(const std::string& way) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  if (way == "unary" || way == "stream-callback") {
    SyncEchoService service;
    builder.RegisterService(&service);
    // As Shoal's node (grpc_runtime.cc): enough polling threads that no call starts one.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 64);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    std::printf("%d\n", port);
    std::fflush(stdout);
    server->Wait();
    std::_Exit(0);
  }
  Echo::AsyncService service;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  std::printf("%d\n", port);
  std::fflush(stdout);
  ServeQueueStreams(&service, cq.get(), way == "stream-handoff");
}

// ---- the client side -------------------------------------------------------------------------

// Counts exchanges in flight and done; the caller waits on it for room.
struct InFlight {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  long done = 0;
  void Complete() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      ++done;
    }
    cv.notify_one();
  }
};

// Keeps `depth` exchanges in flight until `end`, `send` starting one; returns how many ended.
long DriveFromCaller(InFlight* flight, int depth, Clock::time_point end,
                     const std::function<void()>& send) {
  std::unique_lock<std::mutex> lock(flight->mu);
  while (Clock::now() < end) {
    flight->cv.wait(lock, [&] { return flight->in_flight < depth; });
    while (flight->in_flight < depth) {
      ++flight->in_flight;
      lock.unlock();
      send();
      lock.lock();
    }
  }
  flight->cv.wait(lock, [&] { return flight->in_flight == 0; });
  return flight->done;
}

long RunUnary(Echo::Stub* stub, int depth, Clock::time_point end, const std::string& payload) {
  InFlight flight;
  struct Exchange {
    grpc::ClientContext context;
    EchoRequest request;
    EchoReply reply;
  };
  return DriveFromCaller(&flight, depth, end, [&] {
    auto* exchange = new Exchange();
    exchange->request.set_payload(payload);
    stub->async()->Unary(&exchange->context, &exchange->request, &exchange->reply,
                         [&flight, exchange](const grpc::Status& status) {
                           if (!status.ok()) std::abort();
                           delete exchange;
                           flight.Complete();
                         });
  });
}

// The client end of one stream on the callback API.
class EchoPipeClient final : public grpc::ClientBidiReactor<EchoRequest, EchoReply> {
 public:
  EchoPipeClient(Echo::Stub* stub, InFlight* flight) : flight_(flight) {
    stub->async()->Pipe(&context_, this);
    StartRead(&reply_);
    StartCall();
  }
  void Send(EchoRequest request) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(request));
    if (!writing_) WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) std::abort();
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!pending_.empty()) WriteNext();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    flight_->Complete();
    StartRead(&reply_);
  }
  void OnDone(const grpc::Status&) override {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    done_cv_.notify_all();
  }
  void Close() {
    StartWritesDone();
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return finished_; });
  }

 private:
  void WriteNext() {  // mu_ held
    writing_ = true;
    writing_request_ = std::move(pending_.front());
    pending_.pop_front();
    StartWrite(&writing_request_);
  }

  InFlight* const flight_;
  grpc::ClientContext context_;
  EchoReply reply_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  EchoRequest writing_request_;
  std::deque<EchoRequest> pending_;
  bool writing_ = false;
  bool finished_ = false;
};

long RunStreamCallback(Echo::Stub* stub, int depth, Clock::time_point end,
                       const std::string& payload) {
  InFlight flight;
  EchoPipeClient pipe(stub, &flight);
  const long done = DriveFromCaller(&flight, depth, end, [&] {
    EchoRequest request;
    request.set_payload(payload);
    pipe.Send(std::move(request));
  });
  pipe.Close();
  return done;
}

// A stream on the completion-queue API. With `own_thread`, a thread of its own drives the queue
// and completes the caller's exchanges; without, the caller's thread drives it.
long RunStreamQueue(Echo::Stub* stub, int depth, Clock::time_point end, const std::string& payload,
                    bool own_thread) {
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<EchoRequest, EchoReply>> stream =
      stub->AsyncPipe(&context, &cq, kTagStart);
  void* tag = nullptr;
  bool ok = false;
  if (!cq.Next(&tag, &ok) || !ok) std::abort();
  EchoReply reply;
  stream->Read(&reply, kTagRead);
  std::mutex mu;  // guards the three below when a thread of its own drives the queue
  EchoRequest writing_request;
  std::deque<EchoRequest> pending;
  bool writing = false;
  auto send = [&] {
    EchoRequest request;
    request.set_payload(payload);
    std::lock_guard<std::mutex> lock(mu);
    if (writing) {
      pending.push_back(std::move(request));
      return;
    }
    writing = true;
    writing_request = std::move(request);
    stream->Write(writing_request, kTagWrite);
  };
  // One completion: true for an answer.
  auto on_event = [&](void* event, bool event_ok) {
    if (event == kTagRead) {
      if (!event_ok) return false;
      stream->Read(&reply, kTagRead);
      return true;
    }
    std::lock_guard<std::mutex> lock(mu);
    writing = false;
    if (event_ok && !pending.empty()) {
      writing = true;
      writing_request = std::move(pending.front());
      pending.pop_front();
      stream->Write(writing_request, kTagWrite);
    }
    return false;
  };
  long done = 0;
  if (own_thread) {
    InFlight flight;
    std::thread driver([&] {
      void* event = nullptr;
      bool event_ok = false;
      while (cq.Next(&event, &event_ok)) {
        if (event == kTagRead && !event_ok) break;  // cancelled below
        if (on_event(event, event_ok)) flight.Complete();
      }
    });
    done = DriveFromCaller(&flight, depth, end, send);
    context.TryCancel();
    driver.join();
  } else {
    int in_flight = 0;
    while (true) {
      while (in_flight < depth && Clock::now() < end) {
        ++in_flight;
        send();
      }
      if (in_flight == 0 || !cq.Next(&tag, &ok)) break;
      if (on_event(tag, ok)) {
        --in_flight;
        ++done;
      }
    }
    context.TryCancel();
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return done;
}

// ---- the driver ------------------------------------------------------------------------------

struct Way {
  std::string name;
  int depth = 1;
  int kib = 16;
  std::string Label() const { return fmt::format("{} {}x{} KiB", name, depth, kib); }
};

struct Sample {
  double calls_per_second = 0;
  double server_us_per_call = 0;
  double client_us_per_call = 0;
};

// Starts the server of `way` as a child process; its pid and port.
std::pair<pid_t, int> StartServer(const std::string& self, const std::string& way) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(self.c_str(), self.c_str(), "--serve", way.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  close(fds[1]);
  char line[32] = {};
  const ssize_t n = read(fds[0], line, sizeof(line) - 1);
  close(fds[0]);
  if (n <= 0) std::abort();
  return {pid, std::atoi(line)};
}

Sample Measure(const std::string& self, const Way& way, double seconds) {
  const auto [server_pid, port] = StartServer(self, way.name);
  auto channel =
      grpc::CreateChannel(fmt::format("127.0.0.1:{}", port), grpc::InsecureChannelCredentials());
  std::unique_ptr<Echo::Stub> stub = Echo::NewStub(channel);
  const std::string payload(static_cast<size_t>(way.kib) * 1024, 'x');
  auto run = [&](double run_seconds) {
    const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(run_seconds));
    if (way.name == "unary") return RunUnary(stub.get(), way.depth, end, payload);
    if (way.name == "stream-callback") {
      return RunStreamCallback(stub.get(), way.depth, end, payload);
    }
    return RunStreamQueue(stub.get(), way.depth, end, payload, way.name == "stream-handoff");
  };
  run(0.5);  // connects and warms both sides
  const double server0 = ProcessCpuSeconds(server_pid);
  const double client0 = ProcessCpuSeconds(getpid());
  const Clock::time_point start = Clock::now();
  const long calls = run(seconds);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double server1 = ProcessCpuSeconds(server_pid);
  const double client1 = ProcessCpuSeconds(getpid());
  kill(server_pid, SIGKILL);
  waitpid(server_pid, nullptr, 0);
  const double n = static_cast<double>(std::max(calls, 1L));
  return Sample{.calls_per_second = n / elapsed,
                .server_us_per_call = (server1 - server0) * 1e6 / n,
                .client_us_per_call = (client1 - client0) * 1e6 / n};
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::vector<Way> ParseWays(const std::string& text) {
  std::vector<Way> ways;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    Way way;
    const size_t a = item.find('/');
    const size_t b = item.find('/', a + 1);
    way.name = item.substr(0, a);
    if (a != std::string::npos) way.depth = std::stoi(item.substr(a + 1, b - a - 1));
    if (b != std::string::npos) way.kib = std::stoi(item.substr(b + 1));
    if (way.name != "unary" && way.name != "stream-callback" && way.name != "stream-handoff" &&
        way.name != "stream-inline") {
      throw CLI::ValidationError("--ways", "unknown way: " + way.name);
    }
    if (way.depth < 1 || way.kib < 1) throw CLI::ValidationError("--ways", "depth, kib >= 1");
    ways.push_back(way);
  }
  return ways;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"What a gRPC exchange costs in CPU, by the way it is made"};
  std::string serve;
  int rounds = 3;
  double seconds = 3;
  std::string ways_text =
      "unary/1/16,stream-callback/1/16,stream-handoff/1/16,stream-inline/1/16,"
      "unary/16/1,stream-callback/16/1,stream-handoff/16/1,stream-inline/16/1,stream-inline/4/4";
  app.add_option("--serve", serve, "internal: serve this way and print the port");
  app.add_option("--rounds", rounds, "rounds; the ways alternate within each")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "measured seconds of each run")->check(CLI::PositiveNumber);
  app.add_option("--ways", ways_text, "WAY/DEPTH/KIB, comma-separated");
  CLI11_PARSE(app, argc, argv);
  if (!serve.empty()) Serve(serve);
  std::vector<Way> ways;
  try {
    ways = ParseWays(ways_text);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }
  const std::string self = "/proc/self/exe";
  std::vector<std::vector<Sample>> samples(ways.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < ways.size(); ++i) samples[i].push_back(Measure(self, ways[i], seconds));
  }
  std::printf(
      "| way | exchanges/s | 1 KiB operations/s | server CPU us/exchange | client CPU us/exchange "
      "| server CPU us/operation |\n|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < ways.size(); ++i) {
    std::vector<double> rate, server, client;
    for (const Sample& s : samples[i]) {
      rate.push_back(s.calls_per_second);
      server.push_back(s.server_us_per_call);
      client.push_back(s.client_us_per_call);
    }
    const double kib = ways[i].kib;
    std::printf("| %s | %.0f | %.0f | %.1f | %.1f | %.1f |\n", ways[i].Label().c_str(),
                Median(rate), Median(rate) * kib, Median(server), Median(client),
                Median(server) / kib);
  }
  return 0;
}
