// Exhaustive interleavings of two operations with a bucket move (tests/sim/interleaving_explorer.h,
// docs/design/interleavings.md). The environment chooses what to enumerate:
//   SHOAL_INTERLEAVE_SCENARIO  absent, live or deleted (default: all three)
//   SHOAL_INTERLEAVE_FULL=1    start the operations at every scheduling turn of the move, not
//                              only at the named failpoints, before BEGIN and after DONE
//   SHOAL_INTERLEAVE_OPS       one pair, "insert,get" (default: all 15 unordered pairs)
//   SHOAL_INTERLEAVE_STEP      one start step (a move turn, or -1 for after DONE)
//   SHOAL_INTERLEAVE_CHOICES   replay one choice sequence ("0,2,1") of that config and stop
//   SHOAL_INTERLEAVE_VERBOSE=1 print every config's count
//   SHOAL_INTERLEAVE_SAMPLE=n  only every n-th config (pair x start step), each still with every
//                              interleaving; the offset differs per scenario (make test: n = 6)
//   SHOAL_INTERLEAVE_BUDGET    move turns while an operation is runnable (default 1)
//   SHOAL_INTERLEAVE_REPLY_YIELDS=1  a Call yields on its reply too (two turns, not one)
// The replicated harness (ReplicatedWrite) reads SCENARIO, CHOICES, VERBOSE and SAMPLE as above,
// and:
//   SHOAL_INTERLEAVE_FAULT     remove-backup, failover or remove-then-failover (default: all)
//   SHOAL_INTERLEAVE_OPS       "update" (the update alone) or "update,get" (raced by a get)
//   SHOAL_INTERLEAVE_BUDGET    scheduling choices per run (default: no bound; 0: crash points
//                              only, in the default order)
//   SHOAL_INTERLEAVE_TRACE=1   every choice point of the runs on stderr
//   SHOAL_INTERLEAVE_REPLY_YIELDS=1  as above

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/sim/interleaving_explorer.h"

namespace shoal::sim {
namespace {

constexpr uint64_t kMaxRunsPerConfig = 100'000;

const char* Env(const char* name) { return std::getenv(name); }

std::string ScratchDir() {
  // RocksDB opens dominate a run; a memory file system makes them cheap.
  std::string base = "/dev/shm";
  if (const char* dir = Env("SHOAL_INTERLEAVE_DIR"); dir != nullptr) {
    base = dir;
  } else if (!std::filesystem::is_directory(base)) {
    const char* tmp = Env("TMPDIR");
    base = tmp == nullptr ? "/tmp" : tmp;
  }
  return base + "/shoal-interleave-" + std::to_string(::getpid());
}

// Every n-th config is explored: SHOAL_INTERLEAVE_SAMPLE, else the ctest entry's
// SHOAL_INTERLEAVE_SAMPLE_DEFAULT, else 1 (all).
uint64_t SampleEvery() {
  const char* text = Env("SHOAL_INTERLEAVE_SAMPLE") != nullptr
                         ? Env("SHOAL_INTERLEAVE_SAMPLE")
                         : Env("SHOAL_INTERLEAVE_SAMPLE_DEFAULT");
  return text != nullptr ? std::max<uint64_t>(1, std::strtoull(text, nullptr, 10)) : 1;
}

std::vector<Scenario> Scenarios() {
  const char* only = Env("SHOAL_INTERLEAVE_SCENARIO");
  std::vector<Scenario> out;
  for (Scenario s : {Scenario::kAbsent, Scenario::kLive, Scenario::kDeleted}) {
    if (only == nullptr || ToString(s) == only) out.push_back(s);
  }
  return out;
}

std::optional<OpType> ParseOp(std::string_view name) {
  for (OpType op :
       {OpType::kInsert, OpType::kUpdate, OpType::kDelete, OpType::kGet, OpType::kQuery}) {
    if (ToString(op) == name) return op;
  }
  return std::nullopt;
}

std::vector<std::pair<OpType, OpType>> Pairs() {
  std::vector<std::pair<OpType, OpType>> out;
  if (const char* only = Env("SHOAL_INTERLEAVE_OPS"); only != nullptr) {
    const std::string_view text(only);
    const size_t comma = text.find(',');
    auto a = ParseOp(text.substr(0, comma));
    auto b = comma == std::string_view::npos ? a : ParseOp(text.substr(comma + 1));
    if (a.has_value() && b.has_value()) out.emplace_back(*a, *b);
    return out;
  }
  const OpType ops[] = {OpType::kInsert, OpType::kUpdate, OpType::kDelete, OpType::kGet,
                        OpType::kQuery};
  for (size_t i = 0; i < 5; ++i) {
    for (size_t j = i; j < 5; ++j) out.emplace_back(ops[i], ops[j]);
  }
  return out;
}

// The start steps: before BEGIN (0), every named failpoint of the move (the move is paused
// there), after DONE; or, with SHOAL_INTERLEAVE_FULL, every turn of the move.
std::vector<int> Steps(const MoveShape& shape) {
  if (const char* only = Env("SHOAL_INTERLEAVE_STEP"); only != nullptr) return {std::atoi(only)};
  std::set<int> steps{0};
  if (Env("SHOAL_INTERLEAVE_FULL") != nullptr) {
    for (int turn = 1; turn <= shape.turns; ++turn) steps.insert(turn);
  } else {
    for (const auto& [name, turn] : shape.failpoints) steps.insert(turn);
  }
  std::vector<int> out(steps.begin(), steps.end());
  out.push_back(kAfterMoveDone);
  return out;
}

void Enumerate(cluster::TransitionMode mode, std::string_view mode_name) {
  const std::string dir = ScratchDir();
  const int budget =
      Env("SHOAL_INTERLEAVE_BUDGET") != nullptr ? std::atoi(Env("SHOAL_INTERLEAVE_BUDGET")) : 1;
  for (Scenario scenario : Scenarios()) {
    const auto start = std::chrono::steady_clock::now();
    InterleavingConfig base{.scenario = scenario,
                            .a = OpType::kInsert,
                            .b = OpType::kInsert,
                            .start_step = 0,
                            .move_budget = budget,
                            .yield_on_reply = Env("SHOAL_INTERLEAVE_REPLY_YIELDS") != nullptr,
                            .mode = mode,
                            .dir = dir};
    const MoveShape shape = ProbeMove(base);
    ASSERT_TRUE(shape.failure.empty()) << shape.failure;
    std::string named;
    for (const auto& [name, turn] : shape.failpoints) {
      named += fmt::format(" {}@{}", name, turn);
    }
    std::printf("%s %s: the move alone takes %d turns; failpoints:%s\n",
                std::string(mode_name).c_str(), std::string(ToString(scenario)).c_str(),
                shape.turns, named.c_str());
    uint64_t configs = 0, runs = 0, failures = 0, uncertain = 0;
    size_t max_depth = 0;
    const uint64_t sample = SampleEvery();
    uint64_t index = static_cast<uint64_t>(scenario);
    for (const auto& [a, b] : Pairs()) {
      for (int step : Steps(shape)) {
        if (index++ % sample != 0) continue;
        InterleavingConfig config = base;
        config.a = a;
        config.b = b;
        config.start_step = step;
        if (const char* replay = Env("SHOAL_INTERLEAVE_CHOICES"); replay != nullptr) {
          ChoiceSequence choices(ParseChoices(replay));
          const std::string failure = RunInterleaving(config, choices);
          std::printf("replay %s [choices %s]: %s\n", config.DebugString().c_str(),
                      FormatChoices(choices.taken()).c_str(),
                      failure.empty() ? "ok" : failure.c_str());
          EXPECT_TRUE(failure.empty()) << failure;
          continue;
        }
        const ExploreStats stats = ExploreInterleavings(config, kMaxRunsPerConfig);
        ++configs;
        runs += stats.runs;
        uncertain += stats.uncertain;
        max_depth = std::max(max_depth, stats.max_depth);
        if (Env("SHOAL_INTERLEAVE_VERBOSE") != nullptr) {
          std::printf("%s: %llu interleavings, depth %zu\n", config.DebugString().c_str(),
                      static_cast<unsigned long long>(stats.runs), stats.max_depth);
          std::fflush(stdout);
        }
        if (!stats.failure.empty()) {
          ++failures;
          ADD_FAILURE() << stats.failure;
        } else if (!stats.complete) {
          ++failures;
          ADD_FAILURE() << config.DebugString() << ": more than " << kMaxRunsPerConfig
                        << " interleavings";
        }
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "interleavings %s %s: configs %llu, interleavings %llu, max depth %zu, failures %llu, "
        "runs with an operation not applied or of unknown outcome %llu, %.1f s\n",
        std::string(mode_name).c_str(), std::string(ToString(scenario)).c_str(),
        static_cast<unsigned long long>(configs), static_cast<unsigned long long>(runs), max_depth,
        static_cast<unsigned long long>(failures), static_cast<unsigned long long>(uncertain),
        seconds);
    std::fflush(stdout);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

std::vector<ReplicaFault> Faults() {
  const char* only = Env("SHOAL_INTERLEAVE_FAULT");
  std::vector<ReplicaFault> out;
  for (ReplicaFault f :
       {ReplicaFault::kRemoveBackup, ReplicaFault::kFailover, ReplicaFault::kRemoveThenFailover}) {
    if (only == nullptr || ToString(f) == only) out.push_back(f);
  }
  return out;
}

// The replicated harness (interleaving_explorer.h): per fault and scenario, each write (insert,
// update, delete) alone and with a racing get, every crash point and every order of the due
// operations and stream messages.
void EnumerateReplicated() {
  const std::string dir = ScratchDir();
  // SHOAL_INTERLEAVE_BUDGET bounds the scheduling choices per run (the crash points stay all
  // offered); a ctest entry may set a default of its own.
  const char* budget_text = Env("SHOAL_INTERLEAVE_BUDGET") != nullptr
                                ? Env("SHOAL_INTERLEAVE_BUDGET")
                                : Env("SHOAL_INTERLEAVE_BUDGET_DEFAULT");
  const int budget = budget_text != nullptr ? std::atoi(budget_text) : -1;
  const uint64_t sample = SampleEvery();
  std::optional<OpType> only_write;
  std::optional<bool> only_get;
  if (const char* ops = Env("SHOAL_INTERLEAVE_OPS"); ops != nullptr) {
    const std::string_view text(ops);
    const size_t comma = text.find(',');
    only_write = ParseOp(text.substr(0, comma));
    only_get = comma != std::string_view::npos;
  }
  for (ReplicaFault fault : Faults()) {
    for (Scenario scenario : Scenarios()) {
      const auto start = std::chrono::steady_clock::now();
      uint64_t configs = 0, runs = 0, failures = 0, uncertain = 0;
      size_t max_depth = 0;
      // One index over every config of every entry, 7 per entry so that a sample of n takes a
      // different phase of each entry's 6 configs.
      uint64_t index = 7 * (3 * static_cast<uint64_t>(fault) + static_cast<uint64_t>(scenario));
      for (bool with_get : {false, true}) {
        for (OpType write : {OpType::kInsert, OpType::kUpdate, OpType::kDelete}) {
          if (index++ % sample != 0) continue;
          if (only_write.has_value() && (write != *only_write || with_get != *only_get)) continue;
          const ReplicationConfig config{
              .scenario = scenario,
              .write = write,
              .with_get = with_get,
              .fault = fault,
              .reorder_budget = budget,
              .yield_on_reply = Env("SHOAL_INTERLEAVE_REPLY_YIELDS") != nullptr,
              .dir = dir};
          if (const char* replay = Env("SHOAL_INTERLEAVE_CHOICES"); replay != nullptr) {
            ChoiceSequence choices(ParseChoices(replay));
            const std::string failure = RunReplicatedInterleaving(config, choices);
            std::printf("replay %s [choices %s]: %s\n", config.DebugString().c_str(),
                        FormatChoices(choices.taken()).c_str(),
                        failure.empty() ? "ok" : failure.c_str());
            EXPECT_TRUE(failure.empty()) << failure;
            continue;
          }
          const ExploreStats stats = ExploreReplicatedInterleavings(config, kMaxRunsPerConfig);
          ++configs;
          runs += stats.runs;
          uncertain += stats.uncertain;
          max_depth = std::max(max_depth, stats.max_depth);
          if (Env("SHOAL_INTERLEAVE_VERBOSE") != nullptr) {
            std::printf("%s: %llu runs, depth %zu, uncertain %llu\n", config.DebugString().c_str(),
                        static_cast<unsigned long long>(stats.runs), stats.max_depth,
                        static_cast<unsigned long long>(stats.uncertain));
            std::fflush(stdout);
          }
          if (!stats.failure.empty()) {
            ++failures;
            ADD_FAILURE() << stats.failure;
          } else if (!stats.complete) {
            ++failures;
            ADD_FAILURE() << config.DebugString() << ": more than " << kMaxRunsPerConfig << " runs";
          }
        }
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf(
          "replicated interleavings %s %s: configs %llu, runs %llu, max depth %zu, failures %llu, "
          "runs with an operation not applied or of unknown outcome %llu, %.1f s\n",
          std::string(ToString(fault)).c_str(), std::string(ToString(scenario)).c_str(),
          static_cast<unsigned long long>(configs), static_cast<unsigned long long>(runs),
          max_depth, static_cast<unsigned long long>(failures),
          static_cast<unsigned long long>(uncertain), seconds);
      std::fflush(stdout);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(InterleavingTest, ChoiceSearchVisitsEverySequenceOnce) {
  // Two independent choice points of 3 and 2 alternatives, then one of 2 only after choice 0.
  std::set<std::vector<uint32_t>> seen;
  const ExploreStats stats = ExploreChoices(
      [&seen](ChoiceSequence& choices) {
        const uint32_t first = choices.Choose(3);
        (void)choices.Choose(2);
        if (first == 0) (void)choices.Choose(2);
        EXPECT_TRUE(seen.insert(choices.taken()).second);
        return std::string();
      },
      100);
  EXPECT_TRUE(stats.complete);
  EXPECT_EQ(stats.runs, 8u);  // 2*2 + 2*2
  EXPECT_EQ(stats.max_depth, 3u);
  EXPECT_EQ(ParseChoices(FormatChoices({0, 2, 1})), (std::vector<uint32_t>{0, 2, 1}));
}

TEST(InterleavingTest, CopyThenSwitch) {
  Enumerate(cluster::TransitionMode::kCopyThenSwitch, "copy-then-switch");
}

TEST(InterleavingTest, SwitchThenCopy) {
  Enumerate(cluster::TransitionMode::kSwitchThenCopy, "switch-then-copy");
}

TEST(InterleavingTest, ReplicatedWrite) { EnumerateReplicated(); }

// The replicated search does not collapse: an update of a live document against each single
// fault has dozens of crash points and orders (48 and 47 when written), all run, and the
// failover leaves some outcomes unknown (a crash before the acknowledgement).
TEST(InterleavingTest, ReplicatedSearchCoversEveryCrashPoint) {
  const std::string dir = ScratchDir();
  for (ReplicaFault fault : {ReplicaFault::kRemoveBackup, ReplicaFault::kFailover}) {
    const ReplicationConfig config{.scenario = Scenario::kLive,
                                   .write = OpType::kUpdate,
                                   .with_get = false,
                                   .fault = fault,
                                   .reorder_budget = -1,
                                   .yield_on_reply = false,
                                   .dir = dir};
    const ExploreStats stats = ExploreReplicatedInterleavings(config, kMaxRunsPerConfig);
    EXPECT_TRUE(stats.failure.empty()) << stats.failure;
    EXPECT_TRUE(stats.complete) << config.DebugString();
    EXPECT_GE(stats.runs, 30u) << config.DebugString();
    EXPECT_GE(stats.max_depth, 8u) << config.DebugString();
    if (fault == ReplicaFault::kFailover) {
      EXPECT_GT(stats.uncertain, 0u);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace shoal::sim
