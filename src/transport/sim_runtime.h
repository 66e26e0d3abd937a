#pragma once

// SimRuntime: the deterministic simulation of ARCHITECTURE.md §5 (FoundationDB-style). Every task
// runs on an OS thread of its own (threads are reused once their task ends), but exactly one runs
// at a time: a task runs until it yields (Sleep, Call), and then resumes itself the task with the
// earliest wake-up time on a simulated clock (ties broken by the order the wake-ups were
// scheduled); the driving thread takes over between RunUntil calls. Message delays and losses
// are drawn from one seeded generator by the running task, so a seed replays exactly, whatever
// the OS does. Time jumps from event to event: a simulated minute of timeouts costs nothing.
//
// Faults: random one-way delays in [min_delay, max_delay] (which reorder concurrent messages),
// loss of requests or replies with probability `loss` (the caller waits for its timeout), Stop /
// Serve to crash and restart any process, and a chaos hook consulted at every named Failpoint.
//
// Partitions: a link is directional. CutLink(from, to) loses every message sent from `from` to
// `to` while it is cut (a request leg of a Call from `from`, or a reply leg of a Call `to` made
// to `from`), as does a link cut while the message is in flight; the caller waits for its
// timeout. Cut links draw no random numbers.
//
// Clocks: every process has its own clock (docs/design/replication.md §4.1 and §5: leases
// assume clocks that drift within ε). A task's Now, Sleep and Call timeouts are measured on the
// clock of the process it acts for (inside a handler: the callee's). A clock runs at `rate`
// simulated microseconds per true one; message delays and RunUntil are true time. A process
// with no clock set reads true time, so a run that sets none is exactly the run it was before
// clocks existed.
//
// Exploration: a test may install a ScheduleChooser, which then decides among the events that
// are due at the same (earliest) simulated time instead of the seq order; with zero message
// delays every yield point becomes such a choice, which lets a model checker enumerate
// interleavings (tests/sim/interleaving_explorer.h). Without a chooser the scheduling is the one
// described above, unchanged.
//
// Determinism requires the task rules of runtime.h. RocksDB's own background threads do not take
// part in scheduling and do not change what a read returns, so they do not break replay.
//
// Thread-safety: Runtime methods are called by the running task. RunUntil and Shutdown are called
// by one driving thread that is not a task.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "src/common/random.h"
#include "src/transport/runtime.h"

namespace shoal::transport {

struct SimOptions {
  uint64_t seed = 1;
  Micros min_delay = 100;   // one-way message delay bounds, microseconds
  Micros max_delay = 3000;  //
  double loss = 0.0;        // probability that a request, or a reply, is lost
  // Exploration only: with false, a Call whose reply delay is 0 does not yield on the reply, so
  // that the handler and the caller's next steps up to its next yield are one scheduling turn.
  bool yield_on_reply = true;
};

// A process's clock (SimRuntime::SetClock): from the moment it is set it reads true time plus
// `offset`, and then advances `rate` microseconds per true microsecond. `rate` > 0: a clock that
// drifts by at most d has a rate in [1 - d, 1 + d].
struct SimClock {
  double rate = 1.0;
  Micros offset = 0;
};

// Which messages SimRuntime::CutLinks loses between a process and each of the others.
enum class LinkDirection : uint8_t {
  kBoth,      // everything between them
  kOutgoing,  // what the process sends to the others
  kIncoming,  // what the others send to the process
};

class SimRuntime final : public Runtime {
 public:
  // Called at every Failpoint by the running task; returns true to crash (Stop) the process
  // the task acts for at that point.
  using ChaosHook = std::function<bool(const Address& process, std::string_view failpoint)>;
  // Tests that lose or delay one chosen message: the two legs of a Call are its request and its
  // reply; a message may be lost, or delivered `extra_delay` later than its drawn delay (past the
  // caller's deadline it is lost as well).
  enum class MessageLeg : uint8_t { kRequest, kReply };
  struct MessageFate {
    bool lose = false;
    Micros extra_delay = 0;
  };
  // Called by the calling task for each leg of every Call, after its delay is drawn and before
  // the loss draw (which a lost message skips). `from` is the caller, `to` the callee, for both
  // legs.
  using MessageHook = std::function<MessageFate(const Address& from, const Address& to,
                                                const Request& request, MessageLeg leg)>;
  // Given the names of the tasks whose events are due at the earliest time (at least two, in
  // the order the default scheduler would run them), returns the index of the one to run.
  // Called between events (no task runs), outside every task; it must not call the runtime.
  using ScheduleChooser = std::function<size_t(const std::vector<std::string_view>& candidates)>;
  // Called before every event, outside every task, with the name of the task about to run
  // (no task runs meanwhile; it may Spawn tasks, which are due at once, and Stop processes: the
  // task about to run still runs, and its next yield point answers kCancelled if it acts for a
  // stopped process).
  using StepObserver = std::function<void(std::string_view task)>;

  explicit SimRuntime(const SimOptions& options);
  // Shuts down (see Shutdown).
  ~SimRuntime() override;
  SimRuntime(const SimRuntime&) = delete;
  SimRuntime& operator=(const SimRuntime&) = delete;

  // Runs events until no task is left or the next event is later than `deadline` (simulated
  // microseconds). Returns true if tasks remain.
  bool RunUntil(Micros deadline);
  // Stops every process and runs the remaining tasks until all have returned, then joins them.
  // Idempotent.
  void Shutdown();

  void SetChaosHook(ChaosHook hook) { chaos_ = std::move(hook); }
  // Set before RunUntil, or by the running task.
  void SetMessageHook(MessageHook hook) { message_hook_ = std::move(hook); }
  void SetLoss(double loss) { options_.loss = loss; }
  // Set before RunUntil; an empty function restores the default order.
  void SetScheduleChooser(ScheduleChooser chooser) { chooser_ = std::move(chooser); }
  void SetStepObserver(StepObserver observer) { observer_ = std::move(observer); }

  // Partitions (see the class comment). Called by the running task or before RunUntil.
  void CutLink(const Address& from, const Address& to);
  void HealLink(const Address& from, const Address& to);
  // Cuts (or heals) the links between `process` and each of `others` in `direction`.
  void CutLinks(const Address& process, const std::vector<Address>& others,
                LinkDirection direction);
  void HealLinks(const Address& process, const std::vector<Address>& others,
                 LinkDirection direction);
  // Heals every cut link.
  void HealAllLinks();
  [[nodiscard]] bool LinkCut(const Address& from, const Address& to) const;

  // Sets `process`'s clock (see SimClock). Called by the running task or before RunUntil.
  void SetClock(const Address& process, const SimClock& clock);
  // What `process`'s clock reads now.
  [[nodiscard]] Micros NowOf(const Address& process) const;
  // True simulated time, whichever process the caller acts for (a checker's timestamps).
  [[nodiscard]] Micros TrueNow() const;
  // Runs `fn` on the calling task acting for `process` (its current incarnation), so that what
  // `fn` asks the runtime (Now, Alive, Self) is answered for that process: a checker that asks a
  // node's object a question that depends on its clock (a read lease) gets the node's answer.
  void RunAs(const Address& process, const std::function<void()>& fn);

  [[nodiscard]] uint64_t events() const { return events_; }
  [[nodiscard]] uint64_t messages() const { return messages_; }
  [[nodiscard]] bool IsAlive(const Address& process) const;
  // Task threads: those of live tasks and the idle ones kept for the next Spawn.
  [[nodiscard]] size_t TEST_tasks() const;

  // Runtime.
  [[nodiscard]] Micros Now() const override;
  [[nodiscard]] Status Sleep(Micros micros) override;
  [[nodiscard]] StatusOr<Response> Call(const Address& to, Request request,
                                        Micros timeout) override;
  void Spawn(const Address& owner, std::string name, std::function<void()> fn) override;
  void Serve(const Address& self, std::shared_ptr<Service> service) override;
  void Stop(const Address& self) override;
  [[nodiscard]] Address Self() const override;
  [[nodiscard]] bool Alive() const override;
  [[nodiscard]] uint64_t RandomU64() override;
  [[nodiscard]] bool SharesFilesystem() const override { return true; }
  [[nodiscard]] Status Failpoint(std::string_view name) override;

 private:
  struct Task;
  struct Process {
    uint64_t incarnation = 1;
    bool alive = true;
    std::shared_ptr<Service> service;
  };
  // A clock as set: it read `base_local` at true time `base_true`.
  struct Clock {
    double rate = 1.0;
    Micros base_true = 0;
    Micros base_local = 0;
  };
  struct Event {
    Micros time;
    uint64_t seq;
    Task* task;
    uint64_t generation;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  // Parks the calling task until the scheduler resumes it at `wake_at`.
  void Yield(Micros wake_at);
  // Pops the next live event due by deadline_ (asking the chooser, then the observer, with
  // `lock` released), makes its task the running one and returns it; null when none is due
  // (the driving thread then takes over). Called by the yielding task or the driving thread.
  [[nodiscard]] Task* StartNextLocked(std::unique_lock<std::mutex>& lock);
  // Sleep for `micros` of true time (a message's delay, the rest of a Call's timeout).
  [[nodiscard]] Status SleepTrue(Micros micros);
  // The true time `local` microseconds of `process`'s clock take (at least).
  [[nodiscard]] Micros TrueDurationLocked(const Address& process, Micros local) const;
  [[nodiscard]] Micros LocalNowLocked(const Address& process) const;
  // Pops every live event due at `first`'s time, lets the chooser pick one to run and puts the
  // others back. Releases `lock` while the chooser runs.
  [[nodiscard]] Event ChooseLocked(const Event& first, std::unique_lock<std::mutex>& lock);
  void PushLocked(const Event& event);
  [[nodiscard]] Event PopLocked();
  // The body of a task's thread: runs each task given to it, then waits as an idle thread for
  // the next Spawn. A long run spawns many short tasks; a thread per task made thread creation
  // and teardown a fifth of a simulation's time.
  void TaskThread(Task* task);
  [[nodiscard]] Task* Current() const;
  [[nodiscard]] Micros Delay();
  [[nodiscard]] bool Chance(double p);
  [[nodiscard]] bool AliveLocked(const Address& who, uint64_t incarnation) const;
  [[nodiscard]] Process& ProcessLocked(const Address& who);

  SimOptions options_;
  Random random_;
  ChaosHook chaos_;
  MessageHook message_hook_;
  ScheduleChooser chooser_;
  StepObserver observer_;

  mutable std::mutex mu_;
  std::condition_variable scheduler_cv_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::vector<std::unique_ptr<Task>> tasks_;  // every thread: running, parked and idle
  std::vector<Task*> idle_;                   // threads whose task finished, for Spawn to reuse
  std::map<Address, Process> processes_;
  std::map<Address, Clock> clocks_;            // processes with a clock of their own
  std::set<std::pair<Address, Address>> cut_;  // (from, to) links that lose every message
  Task* running_ = nullptr;
  Micros now_ = 0;
  Micros deadline_ = 0;  // of the current RunUntil
  uint64_t seq_ = 0;
  uint64_t events_ = 0;
  uint64_t messages_ = 0;
  bool shutting_down_ = false;
};

}  // namespace shoal::transport
