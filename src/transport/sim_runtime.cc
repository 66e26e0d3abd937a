#include "src/transport/sim_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace shoal::transport {

// One simulated task. `acting` is the process it currently acts for: its owner, or the callee
// while it runs a handler.
struct SimRuntime::Task {
  std::string name;
  Address acting;
  uint64_t acting_incarnation = 0;
  std::condition_variable cv;
  bool scheduled = false;
  bool finished = false;
  // Picked to run next, while the step observer runs: a Stop from the observer leaves its
  // event alone (the task resumes, and its yield points then answer kCancelled).
  bool picked = false;
  // Events of older generations are stale: woken early by Stop, or queued for an earlier task
  // the thread ran.
  uint64_t wake_generation = 0;
  std::function<void()> fn;  // the body of the task it runs next
  uint64_t spawn_seq = 0;    // the seq of its task's first event: the order of spawns
  bool exit = false;         // Shutdown: the thread returns
  std::thread thread;
};

namespace {
thread_local void* current_task = nullptr;
}  // namespace

SimRuntime::SimRuntime(const SimOptions& options) : options_(options), random_(options.seed) {}

SimRuntime::~SimRuntime() { Shutdown(); }

SimRuntime::Task* SimRuntime::Current() const {
  auto* task = static_cast<Task*>(current_task);
  if (task == nullptr) {
    std::fprintf(stderr, "SimRuntime: called outside a simulated task\n");
    std::abort();
  }
  return task;
}

SimRuntime::Process& SimRuntime::ProcessLocked(const Address& who) {
  return processes_[who];  // a process that never served is alive with incarnation 1
}

bool SimRuntime::AliveLocked(const Address& who, uint64_t incarnation) const {
  if (shutting_down_) return false;
  auto it = processes_.find(who);
  if (it == processes_.end()) return incarnation == 1;
  return it->second.alive && it->second.incarnation == incarnation;
}

size_t SimRuntime::TEST_tasks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

bool SimRuntime::IsAlive(const Address& process) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = processes_.find(process);
  return !shutting_down_ && (it == processes_.end() || it->second.alive);
}

Micros SimRuntime::Now() const {
  const auto* task = static_cast<const Task*>(current_task);
  std::lock_guard<std::mutex> lock(mu_);
  // The driving thread (no task) reads true time.
  return task == nullptr ? now_ : LocalNowLocked(task->acting);
}

Micros SimRuntime::TrueNow() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

Micros SimRuntime::NowOf(const Address& process) const {
  std::lock_guard<std::mutex> lock(mu_);
  return LocalNowLocked(process);
}

Micros SimRuntime::LocalNowLocked(const Address& process) const {
  auto it = clocks_.find(process);
  if (it == clocks_.end()) return now_;
  const Clock& clock = it->second;
  return clock.base_local +
         static_cast<Micros>(std::floor(clock.rate * static_cast<double>(now_ - clock.base_true)));
}

Micros SimRuntime::TrueDurationLocked(const Address& process, Micros local) const {
  auto it = clocks_.find(process);
  if (it == clocks_.end() || local <= 0) return local;
  // Rounded up, so that the process's clock has advanced at least `local` by then.
  return static_cast<Micros>(std::ceil(static_cast<double>(local) / it->second.rate));
}

void SimRuntime::SetClock(const Address& process, const SimClock& clock) {
  if (!(clock.rate > 0)) {
    std::fprintf(stderr, "SimRuntime: a clock rate must be positive\n");
    std::abort();
  }
  std::lock_guard<std::mutex> lock(mu_);
  clocks_[process] =
      Clock{.rate = clock.rate, .base_true = now_, .base_local = now_ + clock.offset};
}

void SimRuntime::CutLink(const Address& from, const Address& to) {
  std::lock_guard<std::mutex> lock(mu_);
  cut_.emplace(from, to);
}

void SimRuntime::HealLink(const Address& from, const Address& to) {
  std::lock_guard<std::mutex> lock(mu_);
  cut_.erase({from, to});
}

void SimRuntime::CutLinks(const Address& process, const std::vector<Address>& others,
                          LinkDirection direction) {
  for (const Address& other : others) {
    if (other == process) continue;
    if (direction != LinkDirection::kIncoming) CutLink(process, other);
    if (direction != LinkDirection::kOutgoing) CutLink(other, process);
  }
}

void SimRuntime::HealLinks(const Address& process, const std::vector<Address>& others,
                           LinkDirection direction) {
  for (const Address& other : others) {
    if (other == process) continue;
    if (direction != LinkDirection::kIncoming) HealLink(process, other);
    if (direction != LinkDirection::kOutgoing) HealLink(other, process);
  }
}

void SimRuntime::HealAllLinks() {
  std::lock_guard<std::mutex> lock(mu_);
  cut_.clear();
}

bool SimRuntime::LinkCut(const Address& from, const Address& to) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cut_.contains({from, to});
}

void SimRuntime::RunAs(const Address& process, const std::function<void()>& fn) {
  Task* task = Current();
  const Address acting = task->acting;
  const uint64_t acting_incarnation = task->acting_incarnation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = processes_.find(process);
    task->acting_incarnation = it == processes_.end() ? 1 : it->second.incarnation;
  }
  task->acting = process;
  fn();
  task->acting = acting;
  task->acting_incarnation = acting_incarnation;
}

void SimRuntime::Yield(Micros wake_at) {
  Task* task = Current();
  std::unique_lock<std::mutex> lock(mu_);
  PushLocked(Event{std::max(wake_at, now_), seq_++, task, task->wake_generation});
  task->scheduled = false;
  // The yielding task resumes the next one itself: one thread switch per event, not two
  // through the driving thread.
  Task* next = StartNextLocked(lock);
  if (next == nullptr) {
    running_ = nullptr;
    scheduler_cv_.notify_one();
  } else if (next != task) {
    next->cv.notify_one();
  }
  task->cv.wait(lock, [task] { return task->scheduled; });
}

namespace {
// While the chooser or the step observer runs on a task's thread, it is outside every task,
// as on the driving thread: Now reads true time, and what needs a task aborts.
class OutsideTasks {
 public:
  OutsideTasks() : saved_(std::exchange(current_task, nullptr)) {}
  ~OutsideTasks() { current_task = saved_; }
  OutsideTasks(const OutsideTasks&) = delete;
  OutsideTasks& operator=(const OutsideTasks&) = delete;

 private:
  void* saved_;
};
}  // namespace

SimRuntime::Task* SimRuntime::StartNextLocked(std::unique_lock<std::mutex>& lock) {
  while (!queue_.empty() && queue_.top().time <= deadline_) {
    Event event = PopLocked();
    if (event.generation != event.task->wake_generation) continue;  // woken early by Stop
    if (chooser_) event = ChooseLocked(event, lock);
    now_ = std::max(now_, event.time);
    if (observer_) {
      event.task->picked = true;
      lock.unlock();
      {
        OutsideTasks outside;
        observer_(event.task->name);
      }
      lock.lock();
      event.task->picked = false;
    }
    ++events_;
    running_ = event.task;
    event.task->scheduled = true;
    return event.task;
  }
  return nullptr;
}

Status SimRuntime::Sleep(Micros micros) {
  Micros wait = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wait = TrueDurationLocked(Current()->acting, micros);
  }
  return SleepTrue(wait);
}

Status SimRuntime::SleepTrue(Micros micros) {
  if (!Alive()) return CancelledError("process stopped");
  Yield(TrueNow() + std::max<Micros>(micros, 0));
  if (!Alive()) return CancelledError("process stopped");
  return OkStatus();
}

Micros SimRuntime::Delay() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t span = static_cast<uint64_t>(options_.max_delay - options_.min_delay);
  return options_.min_delay + static_cast<Micros>(random_.Uniform(span + 1));
}

bool SimRuntime::Chance(double p) {
  if (p <= 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return random_.NextDouble() < p;
}

StatusOr<Response> SimRuntime::Call(const Address& to, Request request, Micros timeout) {
  if (!Alive()) return CancelledError("process stopped");
  Task* task = Current();
  const Address caller = task->acting;
  // True time from here on: the timeout is measured on the caller's clock, the network's delays
  // are not.
  Micros deadline = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    deadline = now_ + TrueDurationLocked(caller, timeout);
    ++messages_;
  }
  auto wait_out = [&]() -> StatusOr<Response> {
    const Micros left = deadline - TrueNow();
    if (left > 0) SHOAL_RETURN_IF_ERROR(SleepTrue(left));
    return DeadlineExceededError(fmt::format("{} to {}: no response within {} us",
                                             RequestName(request), to.DebugString(), timeout));
  };

  auto fate = [&](MessageLeg leg) {
    return message_hook_ ? message_hook_(caller, to, request, leg) : MessageFate{};
  };
  Micros request_delay = Delay();
  const MessageFate request_fate = fate(MessageLeg::kRequest);
  request_delay += request_fate.extra_delay;
  if (request_fate.lose || LinkCut(caller, to) || Chance(options_.loss) ||
      TrueNow() + request_delay > deadline) {
    return wait_out();
  }
  SHOAL_RETURN_IF_ERROR(SleepTrue(request_delay));
  if (LinkCut(caller, to)) return wait_out();  // cut while the request was in flight

  std::shared_ptr<Service> service;
  uint64_t incarnation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = processes_.find(to);
    if (it != processes_.end() && it->second.alive && it->second.service != nullptr &&
        !shutting_down_) {
      service = it->second.service;
      incarnation = it->second.incarnation;
    }
  }
  if (service == nullptr) {
    return UnavailableError(
        fmt::format("{}: {} does not answer", RequestName(request), to.DebugString()));
  }

  const uint64_t caller_incarnation = task->acting_incarnation;
  task->acting = to;
  task->acting_incarnation = incarnation;
  Response response = service->Handle(caller, request);
  const bool callee_alive = Alive();
  task->acting = caller;
  task->acting_incarnation = caller_incarnation;
  if (!Alive()) return CancelledError("process stopped");
  if (!callee_alive) {
    return DeadlineExceededError(
        fmt::format("{}: {} stopped while handling it", RequestName(request), to.DebugString()));
  }

  Micros reply_delay = Delay();
  const MessageFate reply_fate = fate(MessageLeg::kReply);
  reply_delay += reply_fate.extra_delay;
  // The reply crosses the link the other way.
  if (reply_fate.lose || LinkCut(to, caller) || Chance(options_.loss) ||
      TrueNow() + reply_delay > deadline) {
    return wait_out();
  }
  if (reply_delay > 0 || options_.yield_on_reply) SHOAL_RETURN_IF_ERROR(SleepTrue(reply_delay));
  if (LinkCut(to, caller)) return wait_out();  // cut while the reply was in flight
  return response;
}

void SimRuntime::Spawn(const Address& owner, std::string name, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  Task* task = nullptr;
  if (!idle_.empty()) {
    task = idle_.back();
    idle_.pop_back();
    task->finished = false;
    ++task->wake_generation;  // the events its earlier task left queued are stale
  } else {
    tasks_.push_back(std::make_unique<Task>());
    task = tasks_.back().get();
    task->thread = std::thread([this, task] { TaskThread(task); });
  }
  task->name = std::move(name);
  task->acting = owner;
  task->acting_incarnation = ProcessLocked(owner).incarnation;
  task->fn = std::move(fn);
  task->spawn_seq = seq_;
  PushLocked(Event{now_, seq_++, task, task->wake_generation});
}

void SimRuntime::TaskThread(Task* task) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    task->cv.wait(lock, [task] { return task->scheduled || task->exit; });
    if (task->exit) return;
    std::function<void()> fn = std::move(task->fn);
    lock.unlock();
    current_task = task;
    fn();
    fn = nullptr;  // its captures die outside the lock, as the task's own stack did
    current_task = nullptr;
    lock.lock();
    task->finished = true;
    task->scheduled = false;
    idle_.push_back(task);
    running_ = nullptr;
    scheduler_cv_.notify_one();
  }
}

void SimRuntime::Serve(const Address& self, std::shared_ptr<Service> service) {
  std::lock_guard<std::mutex> lock(mu_);
  Process& process = ProcessLocked(self);
  if (process.service != nullptr || !process.alive) ++process.incarnation;
  process.alive = true;
  process.service = std::move(service);
}

void SimRuntime::Stop(const Address& self) {
  std::lock_guard<std::mutex> lock(mu_);
  Process& process = ProcessLocked(self);
  process.alive = false;
  process.service = nullptr;
  // Wake the process's parked tasks now, so that they see kCancelled at once instead of at their
  // planned wake-up (their old events become stale). Deterministic: Stop runs in a task.
  // In the order the tasks were spawned (a reused thread keeps its place in tasks_).
  std::vector<Task*> parked;
  for (auto& task : tasks_) {
    if (task->finished || task->scheduled || task->picked || task->acting != self) continue;
    parked.push_back(task.get());
  }
  std::sort(parked.begin(), parked.end(),
            [](const Task* a, const Task* b) { return a->spawn_seq < b->spawn_seq; });
  for (Task* task : parked) {
    ++task->wake_generation;
    PushLocked(Event{now_, seq_++, task, task->wake_generation});
  }
}

Address SimRuntime::Self() const { return Current()->acting; }

bool SimRuntime::Alive() const {
  Task* task = Current();
  std::lock_guard<std::mutex> lock(mu_);
  return AliveLocked(task->acting, task->acting_incarnation);
}

uint64_t SimRuntime::RandomU64() {
  std::lock_guard<std::mutex> lock(mu_);
  return random_.Next64();
}

Status SimRuntime::Failpoint(std::string_view name) {
  if (!Alive()) return CancelledError("process stopped");
  if (chaos_ && chaos_(Self(), name)) {
    Stop(Self());
    return CancelledError(fmt::format("crashed at failpoint {}", name));
  }
  return OkStatus();
}

bool SimRuntime::RunUntil(Micros deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  deadline_ = deadline;
  while (!queue_.empty()) {
    if (queue_.top().time > deadline) return true;
    Task* first = StartNextLocked(lock);
    if (first == nullptr) continue;  // only stale events were due
    first->cv.notify_one();
    // Tasks resume one another until one finishes or none is due by `deadline`.
    scheduler_cv_.wait(lock, [this] { return running_ == nullptr; });
  }
  return false;
}

void SimRuntime::PushLocked(const Event& event) { queue_.push(event); }

SimRuntime::Event SimRuntime::PopLocked() {
  Event event = queue_.top();
  queue_.pop();
  return event;
}

SimRuntime::Event SimRuntime::ChooseLocked(const Event& first, std::unique_lock<std::mutex>& lock) {
  std::vector<Event> due{first};
  while (!queue_.empty() && queue_.top().time == first.time) {
    const Event next = PopLocked();
    if (next.generation == next.task->wake_generation) due.push_back(next);
  }
  size_t pick = 0;
  if (due.size() > 1) {
    std::vector<std::string_view> names;
    names.reserve(due.size());
    for (const Event& e : due) names.push_back(e.task->name);
    lock.unlock();
    {
      OutsideTasks outside;
      pick = chooser_(names);
    }
    lock.lock();
    if (pick >= due.size()) {
      std::fprintf(stderr, "SimRuntime: the schedule chooser picked %zu of %zu\n", pick,
                   due.size());
      std::abort();
    }
  }
  // The others keep their seq, so they stay in the default order.
  for (size_t i = 0; i < due.size(); ++i) {
    if (i != pick) PushLocked(due[i]);
  }
  return due[pick];
}

void SimRuntime::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
  }
  // Every yield point now answers kCancelled, so tasks unwind; sleepers wake at their time.
  uint64_t rounds = 0;
  while (RunUntil(std::numeric_limits<Micros>::max())) {
    if (++rounds > 1000000) {
      std::fprintf(stderr, "SimRuntime: tasks ignore cancellation\n");
      std::abort();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& task : tasks_) {
      task->exit = true;
      task->cv.notify_one();
    }
  }
  for (auto& task : tasks_) {
    if (task->thread.joinable()) task->thread.join();
  }
  tasks_.clear();
  idle_.clear();
}

}  // namespace shoal::transport
