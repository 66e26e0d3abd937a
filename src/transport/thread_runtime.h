#pragma once

// ThreadRuntime: the Runtime of an embedded cluster in one process (`shoal demo`, the embedded
// client). Tasks are OS threads running concurrently; Call runs the callee's handler on the
// caller's thread (no serialization, no copy beyond the request value); time is the steady
// clock. Threads that are not tasks (an application's own threads) act for the process named by
// a ScopedActor, or for Address::Client(0) by default. Failpoint carries out the process's
// SHOAL_FAILPOINTS (failpoints.h): a crash or a pause at a named point; nothing when unset.
//
// Thread-safety: every method is thread-safe. Shutdown (or the destructor) stops every process
// and joins the tasks; it must not be called from a task.

#include <absl/base/thread_annotations.h>
#include <absl/synchronization/mutex.h>

#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "src/transport/failpoints.h"
#include "src/transport/runtime.h"

namespace shoal::transport {

class ThreadRuntime final : public Runtime {
 public:
  ThreadRuntime();
  ~ThreadRuntime() override;
  ThreadRuntime(const ThreadRuntime&) = delete;
  ThreadRuntime& operator=(const ThreadRuntime&) = delete;

  void Shutdown();
  // Waits for every task spawned so far to return (without stopping anything).
  void JoinTasks();

  [[nodiscard]] Micros Now() const override;
  [[nodiscard]] Status Sleep(Micros micros) override;
  // Blocks until the wakeup is set or min(limit, kLongestAwait) passed; a stop of the process is
  // noticed within kLongestAwait.
  [[nodiscard]] Status Await(const Wakeup& wakeup, Micros poll, Micros limit) override;
  static constexpr Micros kLongestAwait = 50'000;
  [[nodiscard]] StatusOr<Response> Call(const Address& to, Request request,
                                        Micros timeout) override;
  void Spawn(const Address& owner, std::string name, std::function<void()> fn) override;
  void Serve(const Address& self, std::shared_ptr<Service> service) override;
  void Stop(const Address& self) override;
  [[nodiscard]] Address Self() const override;
  [[nodiscard]] bool Alive() const override;
  [[nodiscard]] uint64_t RandomU64() override;
  [[nodiscard]] bool SharesFilesystem() const override { return true; }
  // On Linux, a new thread that acts for the caller's process raises its own nice value by
  // `nice_steps` (at most to 19; raising needs no privilege, but lowering it back would, hence a
  // thread per call), runs `fn` and exits; the caller waits for it. Per-thread nice values are
  // Linux behaviour (setpriority on a thread id): elsewhere, and for 0, `fn` runs inline.
  void RunAtLowerPriority(int nice_steps, const std::function<void()>& fn) override;
  [[nodiscard]] Status Failpoint(std::string_view name) override;

  // Replaces this runtime's failpoints (failpoints.h) with `spec`; "" switches them off. A
  // malformed spec is kInvalidArgument and changes nothing. Pauses already running go on.
  [[nodiscard]] Status SetFailpoints(std::string_view spec);
  // The active specification ("" when none).
  [[nodiscard]] std::string FailpointSpec() const;

  // Makes the calling (non-task) thread act for `who` until destroyed.
  class ScopedActor {
   public:
    ScopedActor(ThreadRuntime& runtime, const Address& who);
    ~ScopedActor();
    ScopedActor(const ScopedActor&) = delete;
    ScopedActor& operator=(const ScopedActor&) = delete;

   private:
    Address saved_;
    uint64_t saved_incarnation_;
    const void* saved_runtime_;
  };

 private:
  struct Process {
    uint64_t incarnation = 1;
    bool alive = true;
    std::shared_ptr<Service> service;
  };
  [[nodiscard]] uint64_t IncarnationOf(const Address& who) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] bool AliveLocked(const Address& who, uint64_t incarnation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::chrono::steady_clock::time_point start_;
  mutable absl::Mutex mu_;
  absl::CondVar stop_cv_;  // wakes sleepers when a process stops
  std::map<Address, Process> processes_ ABSL_GUARDED_BY(mu_);
  // Task threads by serial; a task that returns lists its serial in finished_, and the next
  // Spawn joins those, so that short tasks (a batch's concurrent calls) do not pile up.
  std::map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ ABSL_GUARDED_BY(mu_);
  uint64_t next_task_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t random_state_ ABSL_GUARDED_BY(mu_);
  // SHOAL_FAILPOINTS at start, or the last SetFailpoints; nullptr when none. `any_failpoints_`
  // lets Failpoint skip the lock when there are none.
  mutable absl::Mutex failpoints_mu_;
  std::shared_ptr<const Failpoints> failpoints_ ABSL_GUARDED_BY(failpoints_mu_);
  std::atomic<bool> any_failpoints_{false};
};

}  // namespace shoal::transport
