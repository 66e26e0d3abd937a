#include "tests/cluster/history_faults.h"

#include <fmt/format.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace shoal::cluster_test {
namespace {

enum class FaultKind : uint8_t {
  kKill = 0,           // SIGKILL one node; shoal local restarts it
  kLongStop = 1,       // SIGSTOP past the failover timeout, then SIGCONT
  kShortStop = 2,      // SIGSTOP below the failure bound, then SIGCONT
  kKillTwo = 3,        // kill one; once it is back (its copies not rebuilt yet), kill another
  kKillTwoAtOnce = 4,  // kill one, and another 200 ms later: both down for a moment
  kHangThenKill = 5,   // SIGSTOP, then SIGKILL while stopped: down for longer than a restart
};

}  // namespace

Faults::Faults(const LocalCluster& cluster, uint64_t seed, Recorder record)
    : cluster_(cluster), record_(std::move(record)), random_(seed * 7919 + 1) {
  for (uint32_t id = 1; id <= cluster_.nodes(); ++id) lives_[id] = NodeLife{};
}

void Faults::Loop() {
  const uint32_t nodes = cluster_.nodes();
  while (SleepUnlessStopped(std::chrono::milliseconds(random_.Range(1500, 4000)))) {
    bool healed = false;
    for (int i = 0; i < 75 && !Stopped(); ++i) {
      if ((healed = cluster_.Healthy())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (Stopped()) break;
    if (!healed) {
      ++counts_.unhealed;
      record_("(the cluster has not healed after 15 s; the next fault goes ahead)");
    }
    const uint64_t roll = random_.Uniform(20);
    const FaultKind kind = roll < 6    ? FaultKind::kKill
                           : roll < 8  ? FaultKind::kHangThenKill
                           : roll < 12 ? FaultKind::kLongStop
                           : roll < 15 ? FaultKind::kShortStop
                           : roll < 19 ? FaultKind::kKillTwo
                                       : FaultKind::kKillTwoAtOnce;
    const uint32_t first = static_cast<uint32_t>(random_.Range(1, nodes));
    // Another node: the next or the one after, round the ring.
    const uint32_t step = first + 1 + static_cast<uint32_t>(random_.Uniform(nodes - 1));
    const uint32_t other = step > nodes ? step - nodes : step;
    switch (kind) {
      case FaultKind::kKill:
        if (Kill(first)) AwaitRestart(first);
        break;
      case FaultKind::kLongStop:
        StopNode(first, std::chrono::milliseconds(random_.Range(1500, 3000)));
        break;
      case FaultKind::kShortStop:
        StopNode(first, std::chrono::milliseconds(random_.Range(200, 800)));
        break;
      case FaultKind::kKillTwo:
        if (Kill(first) && AwaitRestart(first) &&
            SleepUnlessStopped(std::chrono::milliseconds(random_.Uniform(1000))) && Kill(other)) {
          AwaitRestart(other);
        }
        break;
      case FaultKind::kHangThenKill:
        if (!MayKill(first)) {
          StopNode(first, std::chrono::milliseconds(random_.Range(1500, 3000)));
        } else if (const pid_t pid = cluster_.NodePid(first); pid != 0) {
          ::kill(pid, SIGSTOP);
          ++counts_.stops;
          const auto hang = std::chrono::milliseconds(random_.Range(1000, 2500));
          record_(fmt::format("SIGSTOP node {} (pid {}), to be killed after {} ms", first, pid,
                              hang.count()));
          (void)SleepUnlessStopped(hang);
          // Killed even if the faults are told to stop meanwhile: it ends either way. Never left
          // stopped, should the kill not happen.
          if (Kill(first)) {
            AwaitRestart(first);
          } else {
            ::kill(pid, SIGCONT);
          }
        }
        break;
      case FaultKind::kKillTwoAtOnce: {
        const bool a = Kill(first);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const bool b = Kill(other);
        if (a) AwaitRestart(first);
        if (b) AwaitRestart(other);
        break;
      }
    }
  }
}

void Faults::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
}

bool Faults::SleepUnlessStopped(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(mu_);
  return !wake_.wait_for(lock, duration, [this] { return stop_; });
}

bool Faults::Stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool Faults::MayKill(uint32_t id) {
  const NodeLife& life = lives_[id];
  return Clock::now() - life.started >= kQuickExit || life.quick_kills < kMaxQuickKills;
}

bool Faults::Kill(uint32_t id) {
  const pid_t pid = cluster_.NodePid(id);
  if (pid == 0 || !MayKill(id)) return false;
  NodeLife& life = lives_[id];
  const bool quick = Clock::now() - life.started < kQuickExit;
  life.quick_kills = quick ? life.quick_kills + 1 : 0;
  ::kill(pid, SIGKILL);
  ++counts_.kills;
  record_(fmt::format("SIGKILL node {} (pid {})", id, pid));
  killed_pid_[id] = pid;
  return true;
}

bool Faults::AwaitRestart(uint32_t id) {
  for (int i = 0; i < 200; ++i) {
    const pid_t pid = cluster_.NodePid(id);
    if (pid != 0 && pid != killed_pid_[id]) {
      lives_[id].started = Clock::now();
      ++counts_.restarts;
      record_(fmt::format("node {} restarted by shoal local (pid {})", id, pid));
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  record_(fmt::format("node {} NOT restarted within 10 s", id));
  return false;
}

void Faults::StopNode(uint32_t id, std::chrono::milliseconds duration) {
  const pid_t pid = cluster_.NodePid(id);
  if (pid == 0) return;
  ::kill(pid, SIGSTOP);
  ++counts_.stops;
  record_(fmt::format("SIGSTOP node {} (pid {}) for {} ms", id, pid, duration.count()));
  const auto stopped = Clock::now();
  (void)SleepUnlessStopped(duration);
  ::kill(pid, SIGCONT);
  record_(fmt::format(
      "SIGCONT node {} (pid {}) after {} ms", id, pid,
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stopped).count()));
}

}  // namespace shoal::cluster_test
