#include "src/hotspot/apply_combiner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal::hotspot {
namespace {

StatusOr<Value> Sum(const Value& a, const Value& b) {
  if (!a.is_number_integer() || !b.is_number_integer()) {
    return InvalidArgumentError("not an integer");
  }
  return Value(a.get<int64_t>() + b.get<int64_t>());
}

// Waits (bounded) until `done` holds; the combiner has no hook, so the tests poll its counters.
template <typename Pred>
bool WaitFor(Pred done) {
  for (int i = 0; i < 10000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(ApplyCombinerTest, AnUncontendedUpdateIsWrittenAloneAtOnce) {
  ApplyCombiner combiner;
  std::vector<std::pair<int64_t, uint32_t>> writes;
  auto result = combiner.Apply("f", 1, Value(5), Sum, [&](const Value& v, uint32_t n) {
    writes.emplace_back(v.get<int64_t>(), n);
    return StatusOr<CombinedWrite>(CombinedWrite{.conflicts = 2});
  });
  ASSERT_TRUE(result.write.ok());
  EXPECT_EQ(result.write->conflicts, 2u);
  EXPECT_EQ(result.members, 1u);
  EXPECT_FALSE(result.queued);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0], std::make_pair(int64_t{5}, 1u));
  EXPECT_EQ(combiner.counters().writes, 1u);
  EXPECT_EQ(combiner.counters().combined, 0u);
}

// One running write holds the lane (width 1) until three updates wait: they go out as ONE
// write of their folded operands, and each gets that write's result.
TEST(ApplyCombinerTest, UpdatesThatFindTheLaneFullShareOneWrite) {
  ApplyCombiner combiner;
  std::mutex mu;
  std::vector<std::pair<int64_t, uint32_t>> writes;
  auto write = [&](const Value& v, uint32_t n) -> StatusOr<CombinedWrite> {
    bool first = false;
    {
      std::lock_guard lock(mu);
      first = writes.empty();
      writes.emplace_back(v.get<int64_t>(), n);
    }
    if (first) {
      EXPECT_TRUE(WaitFor([&] { return combiner.counters().combined == 3; }));
    }
    return CombinedWrite{.conflicts = first ? 0u : 7u};
  };
  CombinedResult holder;
  std::thread t0([&] { holder = combiner.Apply("f", 1, Value(1), Sum, write); });
  ASSERT_TRUE(WaitFor([&] { return combiner.counters().writes == 1; }));
  std::vector<CombinedResult> results(3);
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] { results[i] = combiner.Apply("f", 1, Value(10), Sum, write); });
  }
  t0.join();
  for (auto& t : waiters) t.join();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0], std::make_pair(int64_t{1}, 1u));
  EXPECT_EQ(writes[1], std::make_pair(int64_t{30}, 3u)) << "one write of the three operands";
  EXPECT_EQ(holder.members, 1u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.write.ok());
    EXPECT_EQ(r.write->conflicts, 7u);
    EXPECT_EQ(r.members, 3u);
    EXPECT_TRUE(r.queued);
  }
  EXPECT_EQ(combiner.counters().writes, 2u);
}

TEST(ApplyCombinerTest, AGroupWritesErrorIsEveryMembersError) {
  ApplyCombiner combiner;
  std::atomic<int> calls = 0;
  auto write = [&](const Value&, uint32_t) -> StatusOr<CombinedWrite> {
    if (calls.fetch_add(1) == 0) {
      EXPECT_TRUE(WaitFor([&] { return combiner.counters().combined == 2; }));
      return CombinedWrite{};
    }
    return DeadlineExceededError("may or may not have landed");
  };
  std::thread t0([&] { ASSERT_TRUE(combiner.Apply("f", 1, Value(1), Sum, write).write.ok()); });
  ASSERT_TRUE(WaitFor([&] { return calls.load() == 1; }));
  std::vector<CombinedResult> results(2);
  std::thread t1([&] { results[0] = combiner.Apply("f", 1, Value(1), Sum, write); });
  std::thread t2([&] { results[1] = combiner.Apply("f", 1, Value(1), Sum, write); });
  t0.join();
  t1.join();
  t2.join();
  EXPECT_EQ(calls.load(), 2);
  for (const auto& r : results) {
    EXPECT_EQ(r.write.status().code(), StatusCode::kDeadlineExceeded);
  }
}

// An operand the fold refuses to merge with the group's is written alone, at once, and the
// group is not failed for it.
TEST(ApplyCombinerTest, AnUnmergeableOperandRunsAloneWithoutFailingTheGroup) {
  ApplyCombiner combiner;
  std::atomic<int> calls = 0;
  std::mutex mu;
  std::vector<Value> operands;
  auto write = [&](const Value& v, uint32_t) -> StatusOr<CombinedWrite> {
    {
      std::lock_guard lock(mu);
      operands.push_back(v);
    }
    if (calls.fetch_add(1) == 0) {
      EXPECT_TRUE(WaitFor([&] { return combiner.counters().unmergeable == 1; }));
    }
    if (!v.is_number_integer()) return InvalidArgumentError("not an integer");
    return CombinedWrite{};
  };
  std::thread t0([&] { ASSERT_TRUE(combiner.Apply("f", 1, Value(1), Sum, write).write.ok()); });
  ASSERT_TRUE(WaitFor([&] { return calls.load() == 1; }));
  CombinedResult good;
  std::thread t1([&] { good = combiner.Apply("f", 1, Value(2), Sum, write); });
  ASSERT_TRUE(WaitFor([&] { return combiner.counters().combined == 1; }));
  const CombinedResult bad = combiner.Apply("f", 1, Value("x"), Sum, write);
  EXPECT_EQ(bad.write.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(bad.queued);
  t0.join();
  t1.join();
  ASSERT_TRUE(good.write.ok()) << good.write.status();
  EXPECT_EQ(good.members, 1u);
  EXPECT_EQ(operands.size(), 3u);
}

// Many threads on a narrow lane: no update is lost or counted twice, and no more than `width`
// writes of a lane ever run at once; a second lane is not held up by the first.
TEST(ApplyCombinerTest, ConcurrentUpdatesAreEachWrittenOnceWithinTheWidth) {
  constexpr int kThreads = 12;
  constexpr int kUpdates = 200;
  constexpr uint32_t kWidth = 3;
  ApplyCombiner combiner;
  std::atomic<int64_t> total[2] = {0, 0};
  std::atomic<int64_t> updates[2] = {0, 0};
  std::atomic<uint32_t> running[2] = {0, 0};
  std::atomic<uint32_t> most[2] = {0, 0};
  auto writer = [&](int lane) {
    return [&, lane](const Value& v, uint32_t n) -> StatusOr<CombinedWrite> {
      const uint32_t now = running[lane].fetch_add(1) + 1;
      uint32_t seen = most[lane].load();
      while (now > seen && !most[lane].compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      total[lane] += v.get<int64_t>();
      updates[lane] += n;
      running[lane].fetch_sub(1);
      return CombinedWrite{};
    };
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int lane = t % 2;
      for (int i = 0; i < kUpdates; ++i) {
        auto r = combiner.Apply(lane == 0 ? "a" : "b", kWidth, Value(i + 1), Sum, writer(lane));
        ASSERT_TRUE(r.write.ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  constexpr int64_t kPerThread = int64_t{kUpdates} * (kUpdates + 1) / 2;
  for (int lane = 0; lane < 2; ++lane) {
    EXPECT_EQ(total[lane].load(), kPerThread * kThreads / 2);
    EXPECT_EQ(updates[lane].load(), int64_t{kUpdates} * kThreads / 2);
    EXPECT_LE(most[lane].load(), kWidth);
  }
  const ApplyCombinerCounters counters = combiner.counters();
  EXPECT_LT(counters.writes, uint64_t{kUpdates} * kThreads) << "6 threads on 3 slots combine";
}

}  // namespace
}  // namespace shoal::hotspot
