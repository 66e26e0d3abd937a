#include "bench/hotspot/closed_loop.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The calling thread's CPU time and context switches so far.
struct ThreadUsage {
  double cpu_seconds = 0;
  uint64_t voluntary = 0;
  uint64_t involuntary = 0;
};

[[nodiscard]] ThreadUsage UsageOfThisThread() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return ThreadUsage{};
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return ThreadUsage{.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime),
                     .voluntary = static_cast<uint64_t>(usage.ru_nvcsw),
                     .involuntary = static_cast<uint64_t>(usage.ru_nivcsw)};
}

}  // namespace

double PerSecond(const RunStats& s) {
  return s.seconds > 0 ? static_cast<double>(s.succeeded) / s.seconds : 0;
}

double FailedPercent(const RunStats& s) {
  return s.attempted > 0 ? 100.0 * static_cast<double>(s.failed) / static_cast<double>(s.attempted)
                         : 0;
}

double MeanMs(const RunStats& s) {
  if (s.latencies_ns.empty()) return 0;
  long double total = 0;
  for (int64_t ns : s.latencies_ns) total += static_cast<long double>(ns);
  return static_cast<double>(total / static_cast<long double>(s.latencies_ns.size()) / 1e6L);
}

double PercentileMs(const RunStats& s, double p) {
  if (s.latencies_ns.empty()) return 0;
  const auto rank = static_cast<size_t>(p * static_cast<double>(s.latencies_ns.size() - 1) + 0.5);
  return static_cast<double>(s.latencies_ns[rank]) / 1e6;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// `clients` threads call `vote` back to back for `seconds`; every call is timed.
RunStats RunClosedLoop(uint32_t clients, double seconds, uint64_t seed, const VoteFn& vote) {
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<RunStats> per_thread(clients);
  std::vector<std::thread> threads;
  threads.reserve(clients);
  for (uint32_t t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      Random random(seed * 1000003 + t);
      RunStats& mine = per_thread[t];
      mine.latencies_ns.reserve(1 << 16);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const ThreadUsage before = UsageOfThisThread();
      while (!stop.load(std::memory_order_relaxed)) {
        const auto start = Clock::now();
        VoteResult result = vote(random);
        const auto ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
        mine.latencies_ns.push_back(ns);
        ++mine.attempted;
        switch (result.outcome) {
          case Outcome::kSucceeded:
            ++mine.succeeded;
            mine.conflicts += result.conflicts;
            break;
          case Outcome::kFailed:
            ++mine.failed;
            break;
          case Outcome::kError:
            ++mine.errors;
            if (mine.first_error.ok()) mine.first_error = result.error;
            break;
        }
      }
      const ThreadUsage after = UsageOfThisThread();
      mine.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
      mine.voluntary_switches = after.voluntary - before.voluntary;
      mine.involuntary_switches = after.involuntary - before.involuntary;
    });
  }
  const auto start = Clock::now();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& thread : threads) thread.join();
  RunStats total;
  total.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (RunStats& s : per_thread) {
    total.attempted += s.attempted;
    total.succeeded += s.succeeded;
    total.failed += s.failed;
    total.errors += s.errors;
    total.conflicts += s.conflicts;
    total.cpu_seconds += s.cpu_seconds;
    total.voluntary_switches += s.voluntary_switches;
    total.involuntary_switches += s.involuntary_switches;
    if (total.first_error.ok()) total.first_error = s.first_error;
    total.latencies_ns.insert(total.latencies_ns.end(), s.latencies_ns.begin(),
                              s.latencies_ns.end());
  }
  std::sort(total.latencies_ns.begin(), total.latencies_ns.end());
  return total;
}

}  // namespace shoal::bench
