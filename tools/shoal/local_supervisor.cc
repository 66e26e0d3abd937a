#include "tools/shoal/local_supervisor.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "src/process/fail_stop.h"

namespace shoal::tools {

std::string DescribeExit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int signal = WTERMSIG(wait_status);
    const char* name = sigabbrev_np(signal);
    return name != nullptr ? fmt::format("was killed by SIG{}", name)
                           : fmt::format("was killed by signal {}", signal);
  }
  if (WIFEXITED(wait_status)) {
    const int status = WEXITSTATUS(wait_status);
    if (status == process::kExitStorageFailed) {
      return fmt::format(
          "exited with status {}: its disk failed (a storage_failed line in its log says how)",
          status);
    }
    return fmt::format("exited with status {}", status);
  }
  return fmt::format("ended (wait status {})", wait_status);
}

LocalSupervisor::LocalSupervisor(SupervisorOptions options,
                                 std::function<pid_t(const ChildSpec&)> launch,
                                 std::function<void(const std::string&)> say)
    : options_(options), launch_(std::move(launch)), say_(std::move(say)) {}

void LocalSupervisor::Launch(Child& child, Clock::time_point now) {
  child.pid = launch_(child.spec);
  child.started = now;
  child.restart_at.reset();
  if (child.pid <= 0) {
    child.pid = 0;
    say_(fmt::format("local: {} could not be started", child.spec.name));
  }
}

pid_t LocalSupervisor::Start(ChildSpec spec, Clock::time_point now) {
  Child child;
  child.spec = std::move(spec);
  children_.push_back(std::move(child));
  Launch(children_.back(), now);
  return children_.back().pid;
}

void LocalSupervisor::OnExit(pid_t pid, int wait_status, Clock::time_point now) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [pid](const Child& child) { return child.pid == pid && pid > 0; });
  if (it == children_.end()) return;
  Child& child = *it;
  child.pid = 0;
  const std::string what =
      fmt::format("local: {} (pid {}) {}", child.spec.name, pid, DescribeExit(wait_status));
  if (!options_.restart) {
    say_(what + "; the other processes keep serving (--no-restart: it stays down)");
    return;
  }
  child.quick_exits = now - child.started < options_.quick_exit ? child.quick_exits + 1 : 0;
  if (child.quick_exits >= options_.max_quick_exits) {
    say_(fmt::format("{}; it exited {} times in a row right after starting: not restarted (see {})",
                     what, child.quick_exits, child.spec.log));
    return;
  }
  child.restart_at = now + options_.restart_delay;
  say_(fmt::format("{}; the other processes keep serving; restarting it in {} ms", what,
                   options_.restart_delay.count()));
}

std::optional<LocalSupervisor::Clock::time_point> LocalSupervisor::RestartDue(
    Clock::time_point now) {
  std::optional<Clock::time_point> next;
  for (Child& child : children_) {
    if (!child.restart_at.has_value()) continue;
    if (*child.restart_at <= now) {
      Launch(child, now);
      if (child.pid > 0)
        say_(fmt::format("local: {} restarted (pid {})", child.spec.name, child.pid));
      continue;
    }
    if (!next.has_value() || *child.restart_at < *next) next = child.restart_at;
  }
  return next;
}

std::vector<pid_t> LocalSupervisor::Running() const {
  std::vector<pid_t> pids;
  for (const Child& child : children_) {
    if (child.pid > 0) pids.push_back(child.pid);
  }
  return pids;
}

std::optional<pid_t> LocalSupervisor::PidOf(const std::string& name) const {
  for (const Child& child : children_) {
    if (child.spec.name == name && child.pid > 0) return child.pid;
  }
  return std::nullopt;
}

bool LocalSupervisor::AllGone() const {
  return std::all_of(children_.begin(), children_.end(), [](const Child& child) {
    return child.pid == 0 && !child.restart_at.has_value();
  });
}

}  // namespace shoal::tools
