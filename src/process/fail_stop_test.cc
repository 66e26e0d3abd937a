// FailStop (process/fail_stop.h): probes run on threads of their own, the first failure is
// handed on once, a probe that blocks does not hold up the others, and the destructor stops
// them. The default action (log and exit with status 74) is checked with real processes
// (tests/cluster/replication_test.cc, a node's data directory deleted while it runs).

#include "src/process/fail_stop.h"

#include <gtest/gtest.h>

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
