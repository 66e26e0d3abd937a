// FailStop (process/fail_stop.h): probes run on threads of their own, the first failure is
// handed on once, a probe that blocks does not hold up the others, and the destructor stops
// them; ShutDownSockets ends the process's connections. The default action (log and exit with
// status 74) is checked with real processes (tests/cluster/replication_test.cc, a node's data
// directory deleted while it runs).

#include "src/process/fail_stop.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal::process {
namespace {

using std::chrono::milliseconds;

TEST(FailStopTest, TheFirstFailureIsHandedOnOnceWhileABlockedProbeWaits) {
  std::mutex blocker;
  blocker.lock();  // the first probe blocks until the test ends, as a stat on a hung disk
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<std::string> failures;
  {
    FailStop stop("test.failed", "nothing",
                  {[&]() -> std::optional<Status> {
                     std::lock_guard<std::mutex> wait(blocker);
                     return std::nullopt;
                   },
                   [&]() -> std::optional<Status> {
                     // Fails from its third call on, then keeps failing.
                     if (calls.fetch_add(1) < 2) return std::nullopt;
                     return InternalError("broken");
                   }},
                  milliseconds(5), [&](const Status& failure) {
                    std::lock_guard<std::mutex> lock(mu);
                    failures.push_back(failure.ToString());
                  });
    while (calls.load() < 10) std::this_thread::sleep_for(milliseconds(1));
    blocker.unlock();  // the destructor waits for every probe to return
  }
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("broken"), std::string::npos) << failures[0];
}

TEST(FailStopTest, HealthyProbesRunUntilTheDestructor) {
  std::atomic<int> calls{0};
  bool failed = false;
  {
    FailStop stop("test.failed", "nothing", {[&]() -> std::optional<Status> {
                    calls.fetch_add(1);
                    return std::nullopt;
                  }},
                  milliseconds(1), [&](const Status&) { failed = true; });
    while (calls.load() < 3) std::this_thread::sleep_for(milliseconds(1));
  }
  const int after = calls.load();
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(calls.load(), after) << "no probe runs after the destructor";
  EXPECT_FALSE(failed);
}

}  // namespace
}  // namespace shoal::process

namespace shoal::process {
namespace {

// Every socket is shut down (a read sees the end at once instead of waiting); pipes, files
// and descriptors 0-2 are left alone.
TEST(ShutDownSocketsTest, EndsEverySocketAndLeavesOtherDescriptors) {
  int sockets[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sockets), 0);
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  char byte = 0;
  EXPECT_EQ(::recv(sockets[0], &byte, 1, MSG_DONTWAIT), -1) << "open and empty: would block";

  ShutDownSockets();

  EXPECT_EQ(::recv(sockets[0], &byte, 1, MSG_DONTWAIT), 0) << "the end of the stream";
  EXPECT_EQ(::send(sockets[1], "x", 1, MSG_NOSIGNAL), -1) << "no more sends";
  EXPECT_EQ(::write(pipe_ends[1], "x", 1), 1);
  EXPECT_EQ(::read(pipe_ends[0], &byte, 1), 1);
  for (int fd : {sockets[0], sockets[1], pipe_ends[0], pipe_ends[1]}) ::close(fd);
}

}  // namespace
}  // namespace shoal::process
