#include "tools/shoal/local_supervisor.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <string>
#include <vector>

namespace shoal::tools {
namespace {

using namespace std::chrono_literals;
using Clock = LocalSupervisor::Clock;

// Wait statuses as waitpid reports them.
constexpr int Killed(int signal) { return signal; }
constexpr int Exited(int code) { return code << 8; }

struct Fake {
  pid_t next = 100;
  std::vector<std::string> launched;
  std::vector<std::string> said;
  LocalSupervisor Make(SupervisorOptions options) {
    return LocalSupervisor(
        options,
        [this](const ChildSpec& spec) {
          launched.push_back(spec.name);
          return next++;
        },
        [this](const std::string& line) { said.push_back(line); });
  }
};

TEST(LocalSupervisorTest, DescribesExits) {
  EXPECT_EQ(DescribeExit(Killed(SIGKILL)), "was killed by SIGKILL");
  EXPECT_EQ(DescribeExit(Exited(3)), "exited with status 3");
  EXPECT_EQ(DescribeExit(Exited(74)),
            "exited with status 74: its disk failed (a storage_failed line in its log says how)");
}

TEST(LocalSupervisorTest, ADeadChildIsRestartedAfterTheDelayAndTheOthersStay) {
  Fake fake;
  LocalSupervisor supervisor = fake.Make({.restart = true, .restart_delay = 500ms});
  const Clock::time_point t0 = Clock::now();
  supervisor.Start({.name = "coordinator"}, t0);
  const pid_t node = supervisor.Start({.name = "node 1"}, t0);
  supervisor.OnExit(node, Killed(SIGKILL), t0 + 20s);
  EXPECT_EQ(supervisor.Running(), std::vector<pid_t>{100});
  ASSERT_EQ(fake.said.size(), 1u);
  EXPECT_EQ(fake.said[0],
            "local: node 1 (pid 101) was killed by SIGKILL; the other processes keep serving; "
            "restarting it in 500 ms");
  EXPECT_EQ(supervisor.RestartDue(t0 + 20s + 100ms), t0 + 20s + 500ms);
  EXPECT_EQ(fake.launched.size(), 2u);
  EXPECT_EQ(supervisor.RestartDue(t0 + 20s + 500ms), std::nullopt);
  EXPECT_EQ(fake.launched.back(), "node 1");
  EXPECT_EQ(supervisor.PidOf("node 1"), 102);
  EXPECT_EQ(fake.said.back(), "local: node 1 restarted (pid 102)");
  supervisor.OnExit(999, Exited(0), t0 + 30s);  // not a child: ignored
  EXPECT_EQ(supervisor.Running().size(), 2u);
}

TEST(LocalSupervisorTest, NoRestartLeavesItDown) {
  Fake fake;
  LocalSupervisor supervisor = fake.Make({.restart = false});
  const Clock::time_point t0 = Clock::now();
  const pid_t coordinator = supervisor.Start({.name = "coordinator"}, t0);
  const pid_t node = supervisor.Start({.name = "node 1"}, t0);
  supervisor.OnExit(node, Exited(1), t0 + 1s);
  EXPECT_EQ(supervisor.RestartDue(t0 + 1h), std::nullopt);
  EXPECT_FALSE(supervisor.AllGone());
  supervisor.OnExit(coordinator, Exited(1), t0 + 2s);
  EXPECT_TRUE(supervisor.AllGone());
  EXPECT_EQ(fake.launched.size(), 2u);
}

TEST(LocalSupervisorTest, AChildThatKeepsDyingAtOnceIsGivenUp) {
  Fake fake;
  LocalSupervisor supervisor =
      fake.Make({.restart = true, .restart_delay = 0ms, .quick_exit = 10s, .max_quick_exits = 3});
  Clock::time_point now = Clock::now();
  pid_t pid = supervisor.Start({.name = "node 1", .log = "node-1.log"}, now);
  for (int i = 0; i < 2; ++i) {
    now += 1s;
    supervisor.OnExit(pid, Exited(1), now);
    supervisor.RestartDue(now);
    pid = *supervisor.PidOf("node 1");
  }
  now += 1s;
  supervisor.OnExit(pid, Exited(1), now);
  EXPECT_EQ(supervisor.RestartDue(now), std::nullopt);
  EXPECT_TRUE(supervisor.AllGone());
  EXPECT_NE(fake.said.back().find("not restarted (see node-1.log)"), std::string::npos)
      << fake.said.back();
  // A child that ran a while before dying starts the count again.
  Fake other;
  LocalSupervisor patient =
      other.Make({.restart = true, .restart_delay = 0ms, .quick_exit = 10s, .max_quick_exits = 2});
  now = Clock::now();
  pid = patient.Start({.name = "node 2"}, now);
  for (int i = 0; i < 5; ++i) {
    now += 1min;
    patient.OnExit(pid, Killed(SIGKILL), now);
    patient.RestartDue(now);
    ASSERT_TRUE(patient.PidOf("node 2").has_value()) << i;
    pid = *patient.PidOf("node 2");
  }
}

}  // namespace
}  // namespace shoal::tools
