#include "src/transport/thread_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace shoal::transport {
namespace {

// The process the calling thread acts for, per runtime.
struct Context {
  const void* runtime = nullptr;
  Address acting = Address::Client(0);
  uint64_t incarnation = 1;
};
// Address::Client is not noexcept but cannot throw.
thread_local Context context;  // NOLINT(cert-err58-cpp)
// Set on a thread of RunAtLowerPriority: a nested call runs inline.
thread_local bool lowered = false;

}  // namespace

ThreadRuntime::ThreadRuntime()
    : start_(std::chrono::steady_clock::now()), random_state_(std::random_device{}()) {
  // The environment's set lives as long as the process: no deleter.
  if (const Failpoints* from_environment = Failpoints::FromEnvironment()) {
    failpoints_ = std::shared_ptr<const Failpoints>(from_environment, [](const Failpoints*) {});
    any_failpoints_ = true;
  }
}

ThreadRuntime::~ThreadRuntime() { Shutdown(); }

void ThreadRuntime::Shutdown() {
  std::map<uint64_t, std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    threads.swap(threads_);
    finished_.clear();
  }
  stop_cv_.SignalAll();
  for (auto& [serial, thread] : threads) {
    if (thread.joinable()) thread.join();
  }
}

void ThreadRuntime::JoinTasks() {
  std::map<uint64_t, std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
    finished_.clear();
  }
  for (auto& [serial, thread] : threads) {
    if (thread.joinable()) thread.join();
  }
}

Micros ThreadRuntime::Now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start_)
      .count();
}

uint64_t ThreadRuntime::IncarnationOf(const Address& who) {
  absl::MutexLock lock(&mu_);
  return processes_[who].incarnation;
}

bool ThreadRuntime::AliveLocked(const Address& who, uint64_t incarnation) const {
  if (shutting_down_) return false;
  auto it = processes_.find(who);
  if (it == processes_.end()) return incarnation == 1;
  return it->second.alive && it->second.incarnation == incarnation;
}

Address ThreadRuntime::Self() const {
  return context.runtime == this ? context.acting : Address::Client(0);
}

bool ThreadRuntime::Alive() const {
  const Context c = context.runtime == this ? context : Context{this, Address::Client(0), 1};
  absl::MutexLock lock(&mu_);
  return AliveLocked(c.acting, c.incarnation);
}

Status ThreadRuntime::Sleep(Micros micros) {
  const Context c = context.runtime == this ? context : Context{this, Address::Client(0), 1};
  const absl::Time until = absl::Now() + absl::Microseconds(micros);
  absl::MutexLock lock(&mu_);
  while (AliveLocked(c.acting, c.incarnation)) {
    if (stop_cv_.WaitWithDeadline(&mu_, until)) {
      return AliveLocked(c.acting, c.incarnation) ? OkStatus() : CancelledError("process stopped");
    }
  }
  return CancelledError("process stopped");
}

Status ThreadRuntime::Await(const Wakeup& wakeup, Micros poll, Micros limit) {
  (void)poll;
  if (!Alive()) return CancelledError("process stopped");
  (void)wakeup.WaitFor(std::min(limit, kLongestAwait));
  return Alive() ? OkStatus() : CancelledError("process stopped");
}

StatusOr<Response> ThreadRuntime::Call(const Address& to, Request request, Micros timeout) {
  if (!Alive()) return CancelledError("process stopped");
  std::shared_ptr<Service> service;
  uint64_t incarnation = 0;
  {
    absl::MutexLock lock(&mu_);
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
  const Context saved = context;
  const Address caller = Self();
  context = Context{this, to, incarnation};
  Response response = service->Handle(caller, request);
  bool callee_alive = false;
  {
    absl::MutexLock lock(&mu_);
    callee_alive = AliveLocked(to, incarnation);
  }
  context = saved;
  if (!Alive()) return CancelledError("process stopped");
  if (!callee_alive) {
    return DeadlineExceededError(
        fmt::format("{}: {} stopped while handling it", RequestName(request), to.DebugString()));
  }
  (void)timeout;  // handlers run locally; a stopped callee is detected above
  return response;
}

void ThreadRuntime::Spawn(const Address& owner, std::string name, std::function<void()> fn) {
  const uint64_t incarnation = IncarnationOf(owner);
  std::vector<std::thread> done;
  {
    absl::MutexLock lock(&mu_);
    for (uint64_t serial : finished_) {
      // Absent when Shutdown or JoinTasks took the thread meanwhile.
      if (auto it = threads_.find(serial); it != threads_.end()) {
        done.push_back(std::move(it->second));
        threads_.erase(it);
      }
    }
    finished_.clear();
    if (!shutting_down_) {
      const uint64_t serial = next_task_++;
      threads_.emplace(serial, std::thread([this, owner, incarnation, serial, fn = std::move(fn)] {
                         context = Context{this, owner, incarnation};
                         fn();
                         absl::MutexLock lock(&mu_);
                         finished_.push_back(serial);
                       }));
    }
  }
  // The finished tasks have returned from fn: these joins wait only for their threads to exit.
  for (auto& thread : done) thread.join();
  (void)name;
}

void ThreadRuntime::RunAtLowerPriority(int nice_steps, const std::function<void()>& fn) {
#ifdef __linux__
  if (nice_steps > 0 && !lowered) {
    const Context caller = context;
    std::thread worker([&caller, &fn, nice_steps] {
      context = caller;
      lowered = true;
      // PRIO_PROCESS with a thread id sets that thread's nice value only (Linux). A failure
      // leaves the thread at the caller's priority, which is still correct, only slower for the
      // requests.
      const auto tid = static_cast<id_t>(syscall(SYS_gettid));
      errno = 0;
      const int current = getpriority(PRIO_PROCESS, tid);
      if (errno == 0) (void)setpriority(PRIO_PROCESS, tid, std::min(current + nice_steps, 19));
      fn();
    });
    worker.join();
    return;
  }
#endif
  (void)nice_steps;
  fn();
}

void ThreadRuntime::Serve(const Address& self, std::shared_ptr<Service> service) {
  absl::MutexLock lock(&mu_);
  Process& process = processes_[self];
  if (process.service != nullptr || !process.alive) ++process.incarnation;
  process.alive = true;
  process.service = std::move(service);
}

void ThreadRuntime::Stop(const Address& self) {
  {
    absl::MutexLock lock(&mu_);
    Process& process = processes_[self];
    process.alive = false;
    process.service = nullptr;
  }
  stop_cv_.SignalAll();
}

uint64_t ThreadRuntime::RandomU64() {
  absl::MutexLock lock(&mu_);
  // SplitMix64 step: quality is ample for jitter and ids.
  uint64_t z = (random_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Status ThreadRuntime::Failpoint(std::string_view name) {
  if (any_failpoints_.load(std::memory_order_acquire)) {
    std::shared_ptr<const Failpoints> failpoints;
    {
      absl::MutexLock lock(&failpoints_mu_);
      failpoints = failpoints_;
    }
    // Crashes the process here, or asks for a pause.
    if (failpoints != nullptr) {
      if (const int64_t pause_millis = failpoints->Hit(name); pause_millis > 0) {
        SHOAL_RETURN_IF_ERROR(Sleep(pause_millis * 1000));
      }
    }
  }
  return Alive() ? OkStatus() : CancelledError("process stopped");
}

Status ThreadRuntime::SetFailpoints(std::string_view spec) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<Failpoints> parsed, Failpoints::Parse(spec));
  std::shared_ptr<const Failpoints> next;
  if (parsed->size() > 0) next = std::move(parsed);
  absl::MutexLock lock(&failpoints_mu_);
  any_failpoints_.store(next != nullptr, std::memory_order_release);
  failpoints_ = std::move(next);
  std::fprintf(stderr, "failpoints: %s\n",
               failpoints_ == nullptr ? "(none)" : failpoints_->spec().c_str());
  return OkStatus();
}

std::string ThreadRuntime::FailpointSpec() const {
  absl::MutexLock lock(&failpoints_mu_);
  return failpoints_ == nullptr ? std::string() : failpoints_->spec();
}

ThreadRuntime::ScopedActor::ScopedActor(ThreadRuntime& runtime, const Address& who)
    : saved_(context.acting),
      saved_incarnation_(context.incarnation),
      saved_runtime_(context.runtime) {
  context = Context{&runtime, who, runtime.IncarnationOf(who)};
}

ThreadRuntime::ScopedActor::~ScopedActor() {
  context = Context{saved_runtime_, saved_, saved_incarnation_};
}

}  // namespace shoal::transport
