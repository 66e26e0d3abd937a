#include "tests/sim/linearizability.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "src/common/random.h"

namespace shoal::sim {
namespace {

using std::chrono::milliseconds;

Operation Write(OpKind kind, std::string value, OpOutcome outcome, int64_t call, int64_t ret,
                uint64_t client = 1) {
  return {.client = client,
          .kind = kind,
          .value = std::move(value),
          .expected = {},
          .outcome = outcome,
          .read_value = {},
          .call_us = call,
          .return_us = ret};
}
Operation Insert(std::string value, OpOutcome outcome, int64_t call, int64_t ret) {
  return Write(OpKind::kInsert, std::move(value), outcome, call, ret);
}
Operation Update(std::string value, OpOutcome outcome, int64_t call, int64_t ret) {
  return Write(OpKind::kUpdate, std::move(value), outcome, call, ret);
}
Operation Upsert(std::string value, int64_t call, int64_t ret) {
  return Write(OpKind::kUpsert, std::move(value), OpOutcome::kOk, call, ret);
}
Operation Delete(OpOutcome outcome, int64_t call, int64_t ret) {
  return Write(OpKind::kDelete, "", outcome, call, ret);
}
Operation Cas(std::string expected, std::string value, OpOutcome outcome, int64_t call,
              int64_t ret) {
  Operation op = Write(OpKind::kCompareAndSet, std::move(value), outcome, call, ret);
  op.expected = std::move(expected);
  return op;
}
// A Get that read `value`, or found nothing when nullopt.
Operation Get(std::optional<std::string> value, int64_t call, int64_t ret) {
  Operation op =
      Write(OpKind::kGet, "", value ? OpOutcome::kOk : OpOutcome::kNotFound, call, ret, 2);
  op.read_value = value.value_or("");
  return op;
}
Operation Unknown(Operation op) {
  op.outcome = OpOutcome::kUnknown;
  op.return_us = kNeverReturned;
  return op;
}

CheckResult Check(const std::vector<Operation>& history,
                  std::optional<std::string> initial = std::nullopt) {
  const CheckReport report = CheckRegisterHistory(
      history, {.initial_value = std::move(initial), .timeout = milliseconds(5000)});
  return report.result;
}

constexpr CheckResult kYes = CheckResult::kLinearizable;
constexpr CheckResult kNo = CheckResult::kNotLinearizable;

TEST(LinearizabilityTest, EmptyAndSequentialHistories) {
  EXPECT_EQ(Check({}), kYes);
  EXPECT_EQ(Check({Get(std::nullopt, 0, 1)}), kYes);
  EXPECT_EQ(Check({Get("a", 0, 1)}, "a"), kYes);
  EXPECT_EQ(Check({Get("a", 0, 1)}), kNo);
  EXPECT_EQ(
      Check({Insert("a", OpOutcome::kOk, 0, 10), Get("a", 20, 30),
             Update("b", OpOutcome::kOk, 40, 50), Get("b", 60, 70), Delete(OpOutcome::kOk, 80, 90),
             Get(std::nullopt, 100, 110), Delete(OpOutcome::kNotFound, 120, 130),
             Update("c", OpOutcome::kNotFound, 140, 150), Upsert("d", 160, 170),
             Insert("e", OpOutcome::kDuplicate, 180, 190), Get("d", 200, 210)}),
      kYes);
}

TEST(LinearizabilityTest, StaleReadAfterAcknowledgedWrite) {
  EXPECT_EQ(Check({Upsert("a", 0, 10), Upsert("b", 20, 30), Get("a", 40, 50)}), kNo);
  // The same read, concurrent with the second write, may precede it.
  EXPECT_EQ(Check({Upsert("a", 0, 10), Upsert("b", 20, 30), Get("a", 25, 50)}), kYes);
}

TEST(LinearizabilityTest, LostWrite) {
  EXPECT_EQ(Check({Insert("a", OpOutcome::kOk, 0, 10), Get(std::nullopt, 20, 30)}), kNo);
  EXPECT_EQ(Check({Update("b", OpOutcome::kOk, 0, 10), Get("a", 20, 30)}, "a"), kNo);
  EXPECT_EQ(Check({Cas("a", "b", OpOutcome::kOk, 0, 10), Get("a", 20, 30)}, "a"), kNo);
}

TEST(LinearizabilityTest, ResurrectedDelete) {
  EXPECT_EQ(
      Check({Insert("a", OpOutcome::kOk, 0, 10), Delete(OpOutcome::kOk, 20, 30), Get("a", 40, 50)}),
      kNo);
  // A Delete that found nothing must not follow a completed Insert.
  EXPECT_EQ(Check({Insert("a", OpOutcome::kOk, 0, 10), Delete(OpOutcome::kNotFound, 20, 30)}), kNo);
  EXPECT_EQ(Check({Delete(OpOutcome::kOk, 0, 10)}), kNo);
}

TEST(LinearizabilityTest, DuplicateInsert) {
  EXPECT_EQ(Check({Insert("a", OpOutcome::kOk, 0, 10), Insert("b", OpOutcome::kOk, 5, 15)}), kNo);
  EXPECT_EQ(Check({Insert("a", OpOutcome::kOk, 0, 10), Insert("b", OpOutcome::kDuplicate, 5, 15)}),
            kYes);
  // A concurrent Delete between them makes both successes possible.
  EXPECT_EQ(Check({Insert("a", OpOutcome::kOk, 0, 10), Insert("b", OpOutcome::kOk, 5, 15),
                   Delete(OpOutcome::kOk, 0, 15)}),
            kYes);
  EXPECT_EQ(Check({Insert("a", OpOutcome::kDuplicate, 0, 10)}), kNo);
}

TEST(LinearizabilityTest, UpdateOfAbsentKey) {
  EXPECT_EQ(Check({Update("a", OpOutcome::kNotFound, 0, 10), Get(std::nullopt, 20, 30)}), kYes);
  EXPECT_EQ(Check({Update("a", OpOutcome::kOk, 0, 10)}), kNo);
  EXPECT_EQ(Check({Insert("a", OpOutcome::kOk, 0, 10), Update("b", OpOutcome::kNotFound, 20, 30)}),
            kNo);
}

TEST(LinearizabilityTest, ConcurrentWritesReadInEitherOrder) {
  const std::vector<Operation> writes = {Upsert("a", 0, 10), Upsert("b", 0, 10)};
  for (const char* winner : {"a", "b"}) {
    std::vector<Operation> history = writes;
    history.push_back(Get(winner, 20, 30));
    history.push_back(Get(winner, 40, 50));
    EXPECT_EQ(Check(history), kYes) << winner;
  }
  // Once the order is observed it cannot flip.
  std::vector<Operation> flip = writes;
  flip.push_back(Get("a", 20, 30));
  flip.push_back(Get("b", 40, 50));
  EXPECT_EQ(Check(flip), kNo);
  // Reads concurrent with both writes may see them in either order.
  std::vector<Operation> overlapping = writes;
  overlapping.push_back(Get("a", 5, 30));
  overlapping.push_back(Get("b", 6, 30));
  EXPECT_EQ(Check(overlapping), kYes);
}

TEST(LinearizabilityTest, UnknownOutcomes) {
  // An unknown write that later shows up is fine...
  EXPECT_EQ(Check({Upsert("a", 0, 10), Unknown(Upsert("b", 5, 15)), Get("b", 100, 110)}), kYes);
  // ...and so is one that never shows up...
  EXPECT_EQ(Check({Upsert("a", 0, 10), Unknown(Upsert("b", 5, 15)), Get("a", 100, 110),
                   Get("a", 200, 210)}),
            kYes);
  // ...but once seen it cannot vanish without another write...
  EXPECT_EQ(Check({Upsert("a", 0, 10), Unknown(Upsert("b", 5, 15)), Get("b", 100, 110),
                   Get("a", 200, 210)}),
            kNo);
  // ...and it cannot take effect before its call.
  EXPECT_EQ(Check({Get("b", 0, 10), Unknown(Upsert("b", 20, 30))}), kNo);
  // An unknown Insert into a present key does nothing, so it cannot explain a changed value.
  EXPECT_EQ(
      Check({Upsert("a", 0, 10), Unknown(Insert("b", OpOutcome::kOk, 20, 30)), Get("b", 40, 50)}),
      kNo);
  EXPECT_EQ(Check({Upsert("a", 0, 10), Unknown(Delete(OpOutcome::kOk, 20, 30)),
                   Get(std::nullopt, 40, 50), Get(std::nullopt, 60, 70)}),
            kYes);
  // An unknown Get constrains nothing, whatever it claims to have read.
  EXPECT_EQ(Check({Unknown(Get("zzz", 0, 10))}), kYes);
}

TEST(LinearizabilityTest, CompareAndSet) {
  EXPECT_EQ(Check({Cas("a", "b", OpOutcome::kOk, 0, 10), Get("b", 20, 30)}, "a"), kYes);
  // Two concurrent CAS from the same expected value cannot both win...
  EXPECT_EQ(
      Check({Cas("a", "b", OpOutcome::kOk, 0, 10), Cas("a", "c", OpOutcome::kOk, 0, 10)}, "a"),
      kNo);
  // ...but one may win and the other fail, in either order.
  EXPECT_EQ(Check({Cas("a", "b", OpOutcome::kOk, 0, 10),
                   Cas("a", "c", OpOutcome::kConditionFailed, 0, 10), Get("b", 20, 30)},
                  "a"),
            kYes);
  // A chain a -> b -> c linearizes only in chain order.
  EXPECT_EQ(Check({Cas("b", "c", OpOutcome::kOk, 0, 10), Cas("a", "b", OpOutcome::kOk, 0, 10),
                   Get("c", 20, 30)},
                  "a"),
            kYes);
  EXPECT_EQ(Check({Cas("a", "b", OpOutcome::kConditionFailed, 0, 10)}, "a"), kNo);
  EXPECT_EQ(Check({Cas("a", "b", OpOutcome::kConditionFailed, 0, 10)}), kYes);
  EXPECT_EQ(Check({Cas("a", "b", OpOutcome::kOk, 0, 10)}), kNo);
}

// Intervals are closed: an op returning at t and one called at t are concurrent.
TEST(LinearizabilityTest, TouchingIntervalsAreConcurrent) {
  EXPECT_EQ(Check({Upsert("a", 0, 10), Get(std::nullopt, 10, 20)}), kYes);
  EXPECT_EQ(Check({Upsert("a", 0, 10), Get(std::nullopt, 11, 20)}), kNo);
  // Zero-length intervals at one instant are concurrent too.
  EXPECT_EQ(Check({Upsert("a", 5, 5), Get(std::nullopt, 5, 5), Get("a", 5, 5)}), kYes);
}

TEST(LinearizabilityTest, InvalidHistories) {
  EXPECT_EQ(Check({Write(OpKind::kUpsert, "a", OpOutcome::kNotFound, 0, 10)}),
            CheckResult::kInvalidHistory);
  EXPECT_EQ(Check({Write(OpKind::kGet, "", OpOutcome::kDuplicate, 0, 10)}),
            CheckResult::kInvalidHistory);
  EXPECT_EQ(Check({Upsert("a", 10, 9)}), CheckResult::kInvalidHistory);
}

TEST(LinearizabilityTest, ExplanationNamesPrefixAndBlockedOps) {
  const std::vector<Operation> history = {Upsert("a", 0, 10), Upsert("b", 20, 30),
                                          Get("a", 40, 50)};
  const CheckReport report = CheckRegisterHistory(history, {});
  ASSERT_EQ(report.result, kNo);
  EXPECT_NE(report.explanation.find("at best 2 of 3"), std::string::npos) << report.explanation;
  EXPECT_NE(report.explanation.find("#1 c1 Upsert(\"b\") = ok [20, 30]  -> \"b\""),
            std::string::npos)
      << report.explanation;
  EXPECT_NE(report.explanation.find("#2 c2 Get = ok \"a\" [40, 50]  (illegal in this state)"),
            std::string::npos)
      << report.explanation;
}

// All ops overlap and no order works: the search is exponential and must stop at the deadline.
TEST(LinearizabilityTest, PathologicalHistoryTimesOut) {
  std::vector<Operation> history = {Insert("x", OpOutcome::kOk, 0, 1000),
                                    Insert("y", OpOutcome::kOk, 0, 1000)};
  for (int i = 0; i < 60; ++i) history.push_back(Upsert(fmt::format("u{}", i), 0, 1000));
  const auto start = std::chrono::steady_clock::now();
  const CheckReport report =
      CheckRegisterHistory(history, {.initial_value = std::nullopt, .timeout = milliseconds(50)});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(report.result, CheckResult::kTimeout) << report.explanation;
  EXPECT_LT(elapsed, std::chrono::seconds(3));
}

// Unknown ops stay pending to the end of the history; each could double the search space if
// the checker did not prune configurations that differ only by extra unknown ops.
TEST(LinearizabilityTest, ManyPendingUnknownOpsStayCheap) {
  std::vector<Operation> history = {Upsert("a", 0, 10)};
  for (int i = 0; i < 40; ++i) {
    history.push_back(Unknown(Upsert(fmt::format("u{}", i), 20 + i, 0)));
  }
  for (int i = 0; i < 100; ++i) history.push_back(Get("a", 100 + 10 * i, 105 + 10 * i));
  history.push_back(Get("u7", 2000, 2010));
  history.push_back(Get("u7", 2020, 2030));
  const CheckOptions options{.initial_value = std::nullopt, .timeout = milliseconds(5000)};
  CheckReport report = CheckRegisterHistory(history, options);
  EXPECT_EQ(report.result, kYes) << report.explanation;
  EXPECT_LT(report.states_explored, 10'000u);

  history.push_back(Get("a", 2040, 2050));
  report = CheckRegisterHistory(history, options);
  EXPECT_EQ(report.result, kNo) << report.explanation;
  EXPECT_LT(report.states_explored, 100'000u);
}

// Runs the model sequentially, one op every 100 us, then widens each op into an interval around
// its point. Points are strictly increasing, so the sequential order remains a valid
// linearization however much the intervals overlap.
std::vector<Operation> RandomLinearizableHistory(Random& rng, size_t length, int64_t spread,
                                                 uint64_t unknown_one_in) {
  std::optional<std::string> state;
  std::vector<std::string> written;
  std::vector<Operation> history;
  for (size_t i = 0; i < length; ++i) {
    const int64_t point = 100 * static_cast<int64_t>(i + 1);
    Operation op{.client = rng.Uniform(4),
                 .kind = static_cast<OpKind>(rng.Uniform(6)),
                 .value = fmt::format("v{}", i),
                 .expected = {},
                 .outcome = OpOutcome::kOk,
                 .read_value = {},
                 .call_us = point - static_cast<int64_t>(rng.Range(0, spread)),
                 .return_us = point + static_cast<int64_t>(rng.Range(0, spread))};
    if (op.kind == OpKind::kCompareAndSet) {
      if (state.has_value() && !rng.OneIn(3)) {
        op.expected = *state;
      } else {
        op.expected = written.empty() ? "v-none" : written[rng.Uniform(written.size())];
      }
    }
    const bool present = state.has_value();
    std::optional<std::string> next = state;
    switch (op.kind) {
      case OpKind::kInsert:
        op.outcome = present ? OpOutcome::kDuplicate : OpOutcome::kOk;
        if (!present) next = op.value;
        break;
      case OpKind::kUpdate:
        op.outcome = present ? OpOutcome::kOk : OpOutcome::kNotFound;
        if (present) next = op.value;
        break;
      case OpKind::kUpsert:
        next = op.value;
        break;
      case OpKind::kDelete:
        op.outcome = present ? OpOutcome::kOk : OpOutcome::kNotFound;
        next = std::nullopt;
        break;
      case OpKind::kGet:
        op.outcome = present ? OpOutcome::kOk : OpOutcome::kNotFound;
        op.read_value = state.value_or("");
        break;
      case OpKind::kCompareAndSet:
        op.outcome = state == op.expected ? OpOutcome::kOk : OpOutcome::kConditionFailed;
        if (state == op.expected) next = op.value;
        break;
    }
    bool applied = true;
    if (rng.OneIn(unknown_one_in)) {
      // The client never learns the outcome; half of these never took effect at all.
      applied = rng.OneIn(2);
      op = Unknown(std::move(op));
    }
    if (applied) {
      if (next != state && next.has_value()) written.push_back(*next);
      state = next;
    }
    history.push_back(std::move(op));
  }
  // The checker takes ops in any order.
  for (size_t i = history.size(); i > 1; --i) std::swap(history[i - 1], history[rng.Uniform(i)]);
  return history;
}

TEST(LinearizabilityTest, RandomizedHistories) {
  constexpr uint64_t kBaseSeed = 0x5eed2024;
  constexpr int kRounds = 200;
  const CheckOptions options{.initial_value = std::nullopt, .timeout = milliseconds(5000)};
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t seed = kBaseSeed + round;
    SCOPED_TRACE(fmt::format("seed {}", seed));
    Random rng(seed);
    const int64_t spreads[] = {0, 60, 150, 400};
    std::vector<Operation> history = RandomLinearizableHistory(
        rng, rng.Range(5, 80), spreads[rng.Uniform(4)], round % 2 == 0 ? 10 : 4);
    const CheckReport report = CheckRegisterHistory(history, options);
    ASSERT_EQ(report.result, kYes) << report.explanation;

    // A read of a value nobody wrote can never be linearized.
    std::vector<size_t> gets;
    for (size_t i = 0; i < history.size(); ++i) {
      if (history[i].kind == OpKind::kGet && history[i].outcome != OpOutcome::kUnknown) {
        gets.push_back(i);
      }
    }
    if (gets.empty()) {
      history.push_back(Get(std::nullopt, 1'000'000, 1'000'001));
      gets.push_back(history.size() - 1);
    }
    Operation& victim = history[gets[rng.Uniform(gets.size())]];
    victim.outcome = OpOutcome::kOk;
    victim.read_value = "never-written";
    const CheckReport mutated = CheckRegisterHistory(history, options);
    ASSERT_EQ(mutated.result, kNo) << mutated.explanation;
  }
}

// The definition, searched without pruning: some order of all definite ops and any subset of the
// unknown ones is legal in the model, and places an op only when no unplaced definite op
// returned strictly before its call.
bool BruteForceLinearizable(const std::vector<Operation>& history, std::vector<bool>& placed,
                            const std::optional<std::string>& state) {
  bool done = true;
  for (size_t i = 0; i < history.size(); ++i) {
    done = done && (placed[i] || history[i].outcome == OpOutcome::kUnknown);
  }
  if (done) return true;
  for (size_t i = 0; i < history.size(); ++i) {
    if (placed[i]) continue;
    const Operation& op = history[i];
    bool ready = true;
    for (size_t j = 0; j < history.size(); ++j) {
      if (!placed[j] && history[j].outcome != OpOutcome::kUnknown &&
          history[j].return_us < op.call_us) {
        ready = false;
      }
    }
    if (!ready) continue;
    // The model, written out again independently of the checker.
    OpOutcome observed = OpOutcome::kOk;
    std::optional<std::string> next = state;
    switch (op.kind) {
      case OpKind::kInsert:
        observed = state ? OpOutcome::kDuplicate : OpOutcome::kOk;
        if (!state) next = op.value;
        break;
      case OpKind::kUpdate:
        observed = state ? OpOutcome::kOk : OpOutcome::kNotFound;
        if (state) next = op.value;
        break;
      case OpKind::kUpsert:
        next = op.value;
        break;
      case OpKind::kDelete:
        observed = state ? OpOutcome::kOk : OpOutcome::kNotFound;
        next = std::nullopt;
        break;
      case OpKind::kGet:
        observed = state ? OpOutcome::kOk : OpOutcome::kNotFound;
        break;
      case OpKind::kCompareAndSet:
        observed = state == op.expected ? OpOutcome::kOk : OpOutcome::kConditionFailed;
        if (state == op.expected) next = op.value;
        break;
    }
    if (op.outcome != OpOutcome::kUnknown) {
      if (op.outcome != observed) continue;
      if (op.kind == OpKind::kGet && observed == OpOutcome::kOk && op.read_value != *state) {
        continue;
      }
    }
    placed[i] = true;
    const bool found = BruteForceLinearizable(history, placed, next);
    placed[i] = false;
    if (found) return true;
  }
  return false;
}

// Small arbitrary histories, mostly not linearizable, with few values so that they collide:
// the checker (with its pruning and its tie rule) must agree with the definition.
TEST(LinearizabilityTest, AgreesWithBruteForceOnSmallHistories) {
  constexpr uint64_t kBaseSeed = 0xb007e;
  const char* const values[] = {"a", "b", "c"};
  int linearizable = 0;
  for (int round = 0; round < 2000; ++round) {
    const uint64_t seed = kBaseSeed + round;
    SCOPED_TRACE(fmt::format("seed {}", seed));
    Random rng(seed);
    std::vector<Operation> history;
    const size_t length = rng.Range(1, 8);
    for (size_t i = 0; i < length; ++i) {
      const int64_t call = static_cast<int64_t>(rng.Uniform(20));
      Operation op{.client = i,
                   .kind = static_cast<OpKind>(rng.Uniform(6)),
                   .value = values[rng.Uniform(3)],
                   .expected = values[rng.Uniform(3)],
                   .outcome = OpOutcome::kOk,
                   .read_value = {},
                   .call_us = call,
                   .return_us = call + static_cast<int64_t>(rng.Uniform(8))};
      const OpOutcome failures[] = {OpOutcome::kDuplicate, OpOutcome::kNotFound,
                                    OpOutcome::kOk,        OpOutcome::kNotFound,
                                    OpOutcome::kNotFound,  OpOutcome::kConditionFailed};
      if (rng.OneIn(3)) op.outcome = failures[static_cast<int>(op.kind)];
      if (op.kind == OpKind::kGet && op.outcome == OpOutcome::kOk) {
        op.read_value = values[rng.Uniform(3)];
      }
      if (rng.OneIn(4)) op = Unknown(std::move(op));
      history.push_back(std::move(op));
    }
    std::optional<std::string> initial;
    if (rng.OneIn(2)) initial = values[rng.Uniform(3)];
    std::vector<bool> placed(history.size(), false);
    const bool expected = BruteForceLinearizable(history, placed, initial);
    linearizable += expected ? 1 : 0;
    const CheckReport report =
        CheckRegisterHistory(history, {.initial_value = initial, .timeout = milliseconds(5000)});
    std::string dump;
    for (const Operation& op : history) dump += DebugString(op) + "\n";
    ASSERT_EQ(report.result, expected ? kYes : kNo) << dump << report.explanation;
  }
  // Both answers must be well represented for the comparison to mean anything.
  EXPECT_GT(linearizable, 200);
  EXPECT_LT(linearizable, 1800);
}

TEST(HistoryRecorderTest, ChecksEachKeyOnItsOwn) {
  HistoryRecorder recorder;
  // Key "good": a write, a read of it, an unknown write and an op that never ended.
  auto w = recorder.Begin("good", 1, OpKind::kInsert, "a", "", 0);
  recorder.End(w, OpOutcome::kOk, "", 10);
  auto r = recorder.Begin("good", 2, OpKind::kGet, "", "", 20);
  recorder.End(r, OpOutcome::kOk, "a", 30);
  auto u = recorder.Begin("good", 3, OpKind::kUpsert, "b", "", 40);
  recorder.EndUnknown(u);
  (void)recorder.Begin("good", 4, OpKind::kDelete, "", "", 50);  // never ends: unknown
  // Key "bad": the same read on a key nobody wrote.
  auto bad = recorder.Begin("bad", 2, OpKind::kGet, "", "", 20);
  recorder.End(bad, OpOutcome::kOk, "a", 30);
  EXPECT_EQ(recorder.size(), 5u);

  const HistoryRecorder::Summary summary = recorder.CheckAll({});
  EXPECT_FALSE(summary.ok());
  EXPECT_EQ(summary.keys, 2u);
  EXPECT_EQ(summary.operations, 5u);
  EXPECT_EQ(summary.linearizable, 1u);
  EXPECT_EQ(summary.not_linearizable, 1u);
  ASSERT_EQ(summary.failures.size(), 1u);
  EXPECT_EQ(summary.failures[0].key, "bad");
  EXPECT_NE(summary.DebugString().find("key \"bad\": NOT linearizable"), std::string::npos)
      << summary.DebugString();
}

TEST(HistoryRecorderTest, RecordsFromManyThreads) {
  HistoryRecorder recorder;
  std::atomic<int64_t> clock{0};
  std::vector<std::thread> threads;
  for (uint64_t client = 0; client < 4; ++client) {
    threads.emplace_back([&recorder, &clock, client] {
      const std::string key = fmt::format("k{}", client % 2);
      for (int i = 0; i < 50; ++i) {
        const std::string value = fmt::format("c{}-{}", client, i);
        auto write = recorder.Begin(key, client, OpKind::kUpsert, value, "", clock.fetch_add(1));
        recorder.End(write, OpOutcome::kOk, "", clock.fetch_add(1));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const HistoryRecorder::Summary summary = recorder.CheckAll({});
  EXPECT_TRUE(summary.ok()) << summary.DebugString();
  EXPECT_EQ(summary.operations, 200u);
  EXPECT_EQ(summary.keys, 2u);
}

}  // namespace
}  // namespace shoal::sim
