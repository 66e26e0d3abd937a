#pragma once

// LocalSupervisor: the child processes of `shoal local` (a coordinator and its nodes). A child
// that dies does not stop the others: the supervisor says so and, unless restarts are off,
// starts it again on the same data directory and port after a delay, so that a local cluster
// can be used to watch a node fail and come back. A child that keeps dying right after its
// start is given up after a few tries instead of being restarted forever.
//
// The supervisor decides; the caller reaps children (waitpid) and reports each exit, and calls
// RestartDue when the next restart is due. Thread-compatible: one thread drives it.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shoal::tools {

struct ChildSpec {
  std::string name{};               // "coordinator", "node 2": how messages name it
  std::vector<std::string> args{};  // argv of this same binary
  std::string log{};                // its stdout and stderr
};

struct SupervisorOptions {
  bool restart = true;
  std::chrono::milliseconds restart_delay{1000};
  // A child that exits this soon after its start this many times in a row is not restarted.
  std::chrono::milliseconds quick_exit{10'000};
  int max_quick_exits = 5;
};

// "exited with status 1", "was killed by SIGKILL".
[[nodiscard]] std::string DescribeExit(int wait_status);

class LocalSupervisor {
 public:
  using Clock = std::chrono::steady_clock;
  // `launch` starts a child and returns its pid (<= 0: it could not); `say` prints one line.
  LocalSupervisor(SupervisorOptions options, std::function<pid_t(const ChildSpec&)> launch,
                  std::function<void(const std::string&)> say);

  // Launches `spec` now.
  pid_t Start(ChildSpec spec, Clock::time_point now);
  // A child the caller reaped. Unknown pids are ignored.
  void OnExit(pid_t pid, int wait_status, Clock::time_point now);
  // Restarts every child whose delay has passed; returns when the next one is due, if any.
  std::optional<Clock::time_point> RestartDue(Clock::time_point now);

  // The pids of the children that run, in start order (the coordinator first).
  [[nodiscard]] std::vector<pid_t> Running() const;
  [[nodiscard]] std::optional<pid_t> PidOf(const std::string& name) const;
  // True when no child runs and none will be restarted.
  [[nodiscard]] bool AllGone() const;

 private:
  struct Child {
    ChildSpec spec;
    pid_t pid = 0;  // 0: not running
    Clock::time_point started;
    std::optional<Clock::time_point> restart_at;
    int quick_exits = 0;
  };
  void Launch(Child& child, Clock::time_point now);

  SupervisorOptions options_;
  std::function<pid_t(const ChildSpec&)> launch_;
  std::function<void(const std::string&)> say_;
  std::vector<Child> children_;
};

}  // namespace shoal::tools
