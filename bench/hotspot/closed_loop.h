#pragma once

// The closed loop of bench/hotspot: client threads that call one operation back to back for a
// fixed time, and what they measured (counts, latencies, and each thread's CPU time and context
// switches, so that a slower side can be told apart as busier or as more often blocked).

#include <cstdint>
#include <functional>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/common/random.h"

namespace shoal::bench {

enum class Outcome : uint8_t { kSucceeded, kFailed, kError };

// The result of one vote (or one update of the throughput experiment). Value type.
struct VoteResult {
  Outcome outcome = Outcome::kSucceeded;
  uint32_t conflicts = 0;  // conflicting attempts before a successful vote landed
  Status error;            // kError only
};

// One vote by one client thread; the Random is that thread's own.
using VoteFn = std::function<VoteResult(Random&)>;

// What a closed-loop run measured. Value type; latencies_ns is sorted.
struct RunStats {
  uint64_t attempted = 0;
  uint64_t succeeded = 0;
  uint64_t failed = 0;
  uint64_t errors = 0;
  uint64_t conflicts = 0;
  double seconds = 0;
  // Summed over the client threads (getrusage RUSAGE_THREAD): CPU time, and the switches
  // where a thread blocked (voluntary: a lock, I/O) or was preempted (involuntary).
  double cpu_seconds = 0;
  uint64_t voluntary_switches = 0;
  uint64_t involuntary_switches = 0;
  std::vector<int64_t> latencies_ns;
  Status first_error;
};

[[nodiscard]] double PerSecond(const RunStats& s);
[[nodiscard]] double FailedPercent(const RunStats& s);
[[nodiscard]] double MeanMs(const RunStats& s);
[[nodiscard]] double PercentileMs(const RunStats& s, double p);
[[nodiscard]] double Median(std::vector<double> values);

// `clients` threads call `vote` back to back for `seconds`; every call is timed.
[[nodiscard]] RunStats RunClosedLoop(uint32_t clients, double seconds, uint64_t seed,
                                     const VoteFn& vote);

}  // namespace shoal::bench
