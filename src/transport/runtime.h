#pragma once

// Runtime: everything a Shoal process (coordinator, storage node, client) needs from the world —
// time, sleeping, tasks, randomness and request/response messages to other processes — behind
// one interface, so that the same code runs
//   - in one process on threads (ThreadRuntime, thread_runtime.h: `shoal demo`, embedded
//     clusters),
//   - in a deterministic simulation (SimRuntime, sim_runtime.h: one task runs at a time, chosen by
//     a seeded scheduler on a simulated clock, with random delays, loss, reordering and crashes),
//   - over gRPC (GrpcRuntime, src/net/grpc_runtime.h: Call is a unary RPC, Serve a server).
// ARCHITECTURE.md §5; docs/design/cluster.md.
//
// Programming model: code is written in blocking style. A *task* belongs to one *process*
// (Address). Sleep, Await and Call are the only points where a task waits (yield points). Rules
// every caller follows, so that the simulation can run tasks one at a time:
//   1. never hold a mutex across Sleep, Await or Call;
//   2. never wait on anything but Sleep, Await and Call (poll with Sleep, or Await a Wakeup,
//      instead of condition variables);
//   3. when Sleep, Await or Call returns kCancelled the task's process was stopped (killed or
//      shut down): return promptly without touching the process's state.
//
// A request is handled by the callee's Service on the caller's thread (a synchronous RPC); while
// the handler runs, the task acts for the callee process, so a callee crash cancels the handler
// and the caller sees kUnavailable (the reply was lost; the handler may or may not have had an
// effect — exactly what a network gives).
//
// Thread-safety: every method may be called from any task concurrently.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "src/common/status.h"
#include "src/transport/messages.h"
#include "src/transport/wakeup.h"

namespace shoal::transport {

// Microseconds on the runtime's clock (simulated or steady).
using Micros = int64_t;

// Handles the requests addressed to one process incarnation. Implementations must follow the
// task rules above inside Handle.
class Service {
 public:
  virtual ~Service() = default;
  [[nodiscard]] virtual Response Handle(const Address& from, const Request& request) = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  [[nodiscard]] virtual Micros Now() const = 0;

  // Waits `micros` (>= 0). kCancelled if the calling task's process is stopped before or while
  // it waits.
  [[nodiscard]] virtual Status Sleep(Micros micros) = 0;

  // Waits until `wakeup` is set, or for at most `limit`, or less: the caller re-checks what it
  // waits for after every return, as after a Sleep (a poll loop whose sleeps end early). kCancelled
  // as Sleep. This default sleeps `poll` whatever the wakeup does: the simulation keeps its seeded
  // schedule. ThreadRuntime (and GrpcRuntime) return once the wakeup is set, so a task waiting for
  // another thread's event (a replicated write for its backups' answers) neither wakes every
  // `poll` nor waits a `poll` longer than the event.
  [[nodiscard]] virtual Status Await(const Wakeup& wakeup, Micros poll, Micros limit) {
    (void)wakeup;
    (void)limit;
    return Sleep(poll);
  }

  // Sends `request` to `to` and waits for the response. Errors of the transport itself:
  //   kUnavailable       nobody serves `to`: the request was certainly not handled
  //   kDeadlineExceeded  no response within `timeout` (the request or the reply was lost), or
  //                      the callee stopped while handling it: the request MAY have been handled
  //   kCancelled         the caller's process was stopped
  // Otherwise the callee's Response (whose own status may be any error).
  [[nodiscard]] virtual StatusOr<Response> Call(const Address& to, Request request,
                                                Micros timeout) = 0;

  // Call without waiting: returns at once, and `done` later gets exactly what Call would have
  // returned, once. `done` runs on a thread of the runtime's choosing (a transport thread: it
  // must not block), or on the calling thread when the request fails before it is sent. This
  // default runs Call on a new task of the calling process (a thread per call on ThreadRuntime;
  // in the simulation, a task like any other); GrpcRuntime overrides it with gRPC's callback
  // API, so that no thread waits for the reply. A call started while the runtime shuts down
  // may never call `done`: callers wait for their calls before shutting the runtime down.
  using CallDone = std::function<void(StatusOr<Response>)>;
  virtual void CallAsync(const Address& to, Request request, Micros timeout, CallDone done);

  // A streamed scan of one bucket range at `to`: the callee answers `request` page after page,
  // each page's next_cursor feeding the next, and every page reaches `on_page` in order until
  //   - a page with an empty next_cursor (the range is exhausted): OK;
  //   - a page whose status is an error (WRONG_SHARD with its route, NOT_SERVING...): it is
  //     handed to on_page and ends the stream: OK;
  //   - on_page returns an error: the stream is cancelled and that error is returned;
  //   - `timeout` (for the whole stream) passes: kDeadlineExceeded; or a transport error as
  //     Call's (kResourceExhausted: the callee serves too many streams; the request is bad).
  // The pages already delivered stay valid whatever ends the stream: a caller resumes from the
  // last next_cursor it saw.
  //
  // Why a hook with a default rather than a GrpcRuntime-only method: the client's streaming
  // Query is the same code over every runtime. This default is a loop of Call (one round trip
  // per page), which is all ThreadRuntime and SimRuntime need; GrpcRuntime overrides it with one
  // server-streaming RPC (Shoal.Scan) so pages flow without a round trip each.
  [[nodiscard]] virtual Status StreamScan(const Address& to, ScanRequest request, Micros timeout,
                                          const std::function<Status(Response)>& on_page);

  // Starts a task of process `owner`; it runs until `fn` returns. Tasks of a stopped process keep
  // running until they return, but every yield point answers kCancelled.
  virtual void Spawn(const Address& owner, std::string name, std::function<void()> fn) = 0;

  // Starts serving `self` with `service` (a new incarnation of the process). The runtime keeps
  // the service alive while handlers run.
  virtual void Serve(const Address& self, std::shared_ptr<Service> service) = 0;
  // Stops the process `self`: it serves nothing more, and the yield points of its tasks and of
  // its running handlers answer kCancelled. Idempotent.
  virtual void Stop(const Address& self) = 0;

  // The process the calling task acts for (inside a handler: the callee).
  [[nodiscard]] virtual Address Self() const = 0;
  // False once the process the calling task acts for was stopped.
  [[nodiscard]] virtual bool Alive() const = 0;

  // Seeded in the simulation; any good source otherwise.
  [[nodiscard]] virtual uint64_t RandomU64() = 0;

  // Runs `fn` for the calling task (acting for the same process, with the same yield points and
  // cancellation) at a CPU priority `nice_steps` (0-19) below the caller's, and returns when it
  // has returned. For bulk work that should take only the CPU that requests leave (the data of a
  // bucket move): the kernel then gives the cores to the request threads first. The default runs
  // `fn` inline at the caller's priority: that is what the simulation does, so that its schedule
  // stays the seeded one. Within a lowered `fn` a nested call runs inline.
  virtual void RunAtLowerPriority(int nice_steps, const std::function<void()>& fn) {
    (void)nice_steps;
    fn();
  }

  // True when every process of this runtime lives in one OS process on one filesystem (the
  // in-process runtimes), so that a node may read another node's files by path. The default,
  // false, is what a networked runtime answers: nodes then copy files over messages only.
  [[nodiscard]] virtual bool SharesFilesystem() const { return false; }

  // A named point in a protocol where a test may crash the calling process ("move.after_commit").
  // The simulation asks its chaos hook; other runtimes do nothing. kCancelled if the process was
  // stopped here: the caller returns at once, as a killed process would.
  [[nodiscard]] virtual Status Failpoint(std::string_view name) = 0;
};

}  // namespace shoal::transport
