#pragma once

// Failpoints of real processes: what a ThreadRuntime (and so a GrpcRuntime) does at a named
// point of a protocol (Runtime::Failpoint), switched on by the environment variable
// SHOAL_FAILPOINTS, read once when the first runtime of the process is created:
//
//   SHOAL_FAILPOINTS="coordinator.after_commit=crash:1,source.after_fence=pause:500"
//
//   NAME=crash[:N]  the N-th time (default 1) the process reaches NAME it dies at once, as by
//                   SIGKILL (it sends itself SIGKILL: no destructors, no flush, no clean close)
//   NAME=pause:MS   every time, the task waits MS milliseconds there (a window for a test to
//                   kill the process from outside); a stop of the process ends the wait
//
// Entries are separated by ',' or ';'. A malformed value stops the process at start with exit
// status 2 and a message on stderr. Each hit of a configured point is logged on stderr. When the
// variable is unset, Failpoint costs one atomic load. A running process's failpoints can also be
// replaced by an admin call (`shoal failpoint`, ThreadRuntime::SetFailpoints): the new set
// starts with fresh hit counts; an empty set switches them all off.
//
// Thread-safety: Parse is pure; a Failpoints object is immutable but for its hit counters,
// which are atomic, so Hit may be called from any thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::transport {

enum class FailpointAction : uint8_t { kCrash, kPause };

class Failpoints {
 public:
  // The value of SHOAL_FAILPOINTS.
  static constexpr const char* kEnvironmentVariable = "SHOAL_FAILPOINTS";

  [[nodiscard]] static StatusOr<std::unique_ptr<Failpoints>> Parse(std::string_view spec);

  // The process's failpoints from the environment, parsed on the first call; nullptr when the
  // variable is unset or empty. Exits with status 2 on a malformed value.
  [[nodiscard]] static const Failpoints* FromEnvironment();

  // What to do at `name` now: nothing (the point is not configured, or a crash point before its
  // N-th hit), or the action. A crash is carried out here (this call does not return); a pause
  // returns its duration in milliseconds for the runtime to wait, 0 otherwise.
  [[nodiscard]] int64_t Hit(std::string_view name) const;

  [[nodiscard]] size_t size() const { return points_.size(); }
  // The specification this object was parsed from.
  [[nodiscard]] const std::string& spec() const { return spec_; }

 private:
  struct Point {
    FailpointAction action = FailpointAction::kCrash;
    uint64_t crash_at_hit = 1;
    int64_t pause_millis = 0;
    std::unique_ptr<std::atomic<uint64_t>> hits;
  };
  Failpoints() = default;

  std::string spec_;
  std::map<std::string, Point, std::less<>> points_;
};

// Failpoints that the randomized simulation's recorded seeds and the interleaving test's turns
// leave out (most lie inside a storage node's own handling of a move): the simulation draws
// no crash at them and the interleaving explorer makes no turn of them, so that every recorded
// seed and interleaving replays unchanged. Deterministic tests crash a process at each of them
// (tests/coordinator/node_restart_test.cc, coordinator_test.cc); real processes honour them like
// any other point.
inline constexpr std::array<std::string_view, 7> kUnscheduledFailpoints = {
    "source.after_export",        // the export is registered, not answered
    "source.after_read_changes",  // a catch-up read is done, not answered
    "source.after_drop",          // the bucket's range is dropped, not answered
    "destination.after_drain",    // the drain reached the fence's sequence, not answered
    "coordinator.after_cleanup",  // the kCleanup map is stored, the source's drop not sent
    "coordinator.after_abort",    // an ABORT is stored, the destination's drop not sent
    "node.after_write",           // a client's write (or batch) is applied, not answered
};

[[nodiscard]] inline bool IsUnscheduledFailpoint(std::string_view name) {
  for (std::string_view point : kUnscheduledFailpoints) {
    if (point == name) return true;
  }
  return false;
}

}  // namespace shoal::transport
