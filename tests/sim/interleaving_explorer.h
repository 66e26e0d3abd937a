#pragma once

// Exhaustive interleavings of two client operations with one bucket move (paper 000 §7.2,
// generalized; docs/design/interleavings.md).
//
// A stateless model checker: SimRuntime runs with zero message delays, so that every yield point
// of every task (each Call's request delivery and reply, each Sleep(0), each named failpoint of
// the move, which this harness turns into a yield) is due at the same simulated time, and a
// ScheduleChooser decides which due task runs next. One *run* rebuilds the cluster from scratch
// and follows a forced prefix of choices, then takes choice 0; ExploreChoices does a depth-first
// search over the recorded choice points by replay until every sequence was run.
//
// The harness (RunInterleaving): a coordinator and two storage nodes, one collection, one
// bucket holding the test key moved from n1 to n2 by Coordinator::MoveBucket on its own task.
// The initial document is absent, live or deleted (a tombstone). Both operations start after
// the move task's `start_step`-th scheduling turn and are explored against each other and
// against at most `move_budget` further turns of the move (beyond that budget the move runs
// only when no operation is runnable). The outcome — each operation's result and the final
// state read by a Get and a Query after everything settled — must equal one of the serial
// orders of a single-key register model, the move must finish or abort cleanly, and exactly
// one node must serve the key afterwards.
//
// The replicated harness (RunReplicatedInterleaving, below) uses the same search for one write
// against a backup's removal and a primary's failover at K = 3.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/cluster/transition.h"

namespace shoal::sim {

// --- the generic search ---

// The choices of one run: a forced prefix, then 0. Records how many alternatives every choice
// point had, for the search to backtrack.
class ChoiceSequence {
 public:
  explicit ChoiceSequence(std::vector<uint32_t> prefix = {}) : prefix_(std::move(prefix)) {}

  // Picks one of `alternatives` (>= 2).
  [[nodiscard]] uint32_t Choose(uint32_t alternatives);

  [[nodiscard]] const std::vector<uint32_t>& taken() const { return taken_; }
  [[nodiscard]] const std::vector<uint32_t>& widths() const { return widths_; }
  // False if a forced choice was out of range (the replay diverged from the recorded run).
  [[nodiscard]] bool consistent() const { return consistent_; }

 private:
  std::vector<uint32_t> prefix_;
  std::vector<uint32_t> taken_;
  std::vector<uint32_t> widths_;
  bool consistent_ = true;
};

struct ExploreStats {
  uint64_t runs = 0;
  size_t max_depth = 0;   // choice points of the longest run
  bool complete = false;  // every sequence was run (no failure, no cap)
  std::string failure;    // the first failure, with its choice sequence
  // Runs in which an operation failed without effect or with an unknown outcome (the serial
  // orders then leave it out, or may).
  uint64_t uncertain = 0;
};

// Runs `run` once per choice sequence, depth first, until all were run, `run` reports a failure
// (a non-empty string) or `max_runs` runs were made.
[[nodiscard]] ExploreStats ExploreChoices(const std::function<std::string(ChoiceSequence&)>& run,
                                          uint64_t max_runs);
// ExploreChoices over a harness's runs, each of which also says whether an operation's outcome
// was uncertain (counted in ExploreStats::uncertain); a failure is prefixed with `label`.
[[nodiscard]] ExploreStats ExploreHarness(
    const std::function<std::string(ChoiceSequence&, bool* uncertain)>& run, std::string_view label,
    uint64_t max_runs);

[[nodiscard]] std::string FormatChoices(const std::vector<uint32_t>& choices);
[[nodiscard]] std::vector<uint32_t> ParseChoices(std::string_view text);

// --- the move harness ---

enum class Scenario : uint8_t { kAbsent, kLive, kDeleted };
enum class OpType : uint8_t { kInsert, kUpdate, kDelete, kGet, kQuery };
[[nodiscard]] std::string_view ToString(Scenario scenario);
[[nodiscard]] std::string_view ToString(OpType op);

// Operations start once the move task finished (DONE or aborted).
inline constexpr int kAfterMoveDone = -1;

struct InterleavingConfig {
  Scenario scenario = Scenario::kAbsent;
  OpType a = OpType::kInsert;
  OpType b = OpType::kInsert;
  int start_step = 0;  // move turns before the operations start, or kAfterMoveDone
  int move_budget = 2;
  // False: a Call is one scheduling turn (request delivery, handler, reply), not two.
  bool yield_on_reply = false;
  // The protocol of the move under test.
  cluster::TransitionMode mode = cluster::TransitionMode::kCopyThenSwitch;
  std::string dir;  // scratch directory; each run uses and removes a subdirectory

  [[nodiscard]] std::string DebugString() const;
};

// What a move looks like without concurrent operations: its scheduling turns, and the turn at
// which it is paused at each named failpoint.
struct MoveShape {
  int turns = 0;
  std::vector<std::pair<std::string, int>> failpoints;  // in order of hits
  std::string failure;
};
[[nodiscard]] MoveShape ProbeMove(const InterleavingConfig& config);

// One run with the given choices; returns "" or what went wrong. `uncertain` (optional) is set
// if an operation failed without effect or with an unknown outcome.
[[nodiscard]] std::string RunInterleaving(const InterleavingConfig& config, ChoiceSequence& choices,
                                          bool* uncertain = nullptr);

// All interleavings of one config. The failure names the config and the choices to replay.
[[nodiscard]] ExploreStats ExploreInterleavings(const InterleavingConfig& config,
                                                uint64_t max_runs);

// --- the replicated harness (interleaving_replication.cc) ---
//
// One write of the key (and optionally a get) against a reconfiguration of its bucket at K = 3
// (docs/design/replication.md §4; docs/design/interleavings.md, "Replicated buckets"): a
// coordinator and nodes n1 (primary), n2 and n3 (backups), min_in_sync 2. The fault is a crash,
// at a chosen point of the run, of
//   kRemoveBackup        n3: its primary reports it and the coordinator removes it (§4.1);
//   kFailover            n1: the coordinator seals, waits out the lease, promotes (§4.2);
//   kRemoveThenFailover  n3, then n1 at a later chosen point.
// The crash points are: before the write's first turn, after every turn that changed what
// the harness observes (a node's map epoch, its copy's (term, rseq) or liveness, the
// coordinator's map, an operation's end, a turn of an operation or of a replication message),
// and between the victim's handling of a write or stream message and its answer (then lost).
// Among tasks due at once, the operations' turns and the stream messages' (CallAsync) are
// explored against each other; every other task runs first.

enum class ReplicaFault : uint8_t { kRemoveBackup, kFailover, kRemoveThenFailover };
[[nodiscard]] std::string_view ToString(ReplicaFault fault);

struct ReplicationConfig {
  Scenario scenario = Scenario::kAbsent;
  OpType write = OpType::kInsert;  // insert, update or delete
  bool with_get = false;           // a get of the key races with the write
  ReplicaFault fault = ReplicaFault::kRemoveBackup;
  // Scheduling choices (an order of due operations and stream messages) per run, beyond which
  // they run in their default order; -1: no bound. The crash points are always all offered.
  int reorder_budget = -1;
  // True: a Call yields on its reply too, so a handler and its caller's next steps are two
  // turns (SHOAL_INTERLEAVE_REPLY_YIELDS).
  bool yield_on_reply = false;
  std::string dir;  // scratch directory; each run uses and removes a subdirectory

  [[nodiscard]] std::string DebugString() const;
};

// One run with the given choices; returns "" or what went wrong. `uncertain` (optional) is set
// if an operation failed without effect or with an unknown outcome.
[[nodiscard]] std::string RunReplicatedInterleaving(const ReplicationConfig& config,
                                                    ChoiceSequence& choices,
                                                    bool* uncertain = nullptr);

// All runs of one config. The failure names the config and the choices to replay.
[[nodiscard]] ExploreStats ExploreReplicatedInterleavings(const ReplicationConfig& config,
                                                          uint64_t max_runs);

}  // namespace shoal::sim
