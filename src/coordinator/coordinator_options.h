#pragma once

// The coordinator's options and the value types its parts share: the move progress counters,
// the balancer's thresholds, a plan preview. Value types; thread-compatible.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/cluster/migration_plan.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

// The default move throttle (CoordinatorOptions::max_bytes_per_second): 16 MiB/s. On the 2-core
// machine a 1 GiB join then keeps the clients at >= 0.9 of their steady throughput on fast and
// slow days alike, for about 18 s to balance instead of 11 at 32 MiB/s
// (docs/results/rebalance.md, "Half the rate as the default").
inline constexpr uint64_t kDefaultMoveBytesPerSecond = uint64_t{16} << 20;

// AddNode waits this long for a node whose process just started to send its first heartbeat,
// polling every kCheckInPoll; a node id with no process behind it fails after the grace.
inline constexpr transport::Micros kAddNodeGrace = 2'000'000;
// How long Coordinator::SetReplication waits for the moves in flight to end.
inline constexpr transport::Micros kReplicationChangeWait = 30'000'000;
inline constexpr transport::Micros kCheckInPoll = 20'000;
// Ten minutes: a rolling restart (nodes down for a minute or two, one after another) often makes
// a bucket short again soon after it became whole, and its stale copy is then the repair that
// resumes from the log; by the log's retention (1 h, storage.md §3) it could resume no more.
inline constexpr transport::Micros kDefaultStaleCopyGrace = 600'000'000;

struct CoordinatorOptions {
  transport::Micros call_timeout = 2'000'000;
  // An ingest copies the bucket's files from the source (over the network between machines):
  // its call waits call_timeout plus the exported bytes at this rate, so a large bucket is not
  // failed for the time its copy takes.
  uint64_t min_transfer_bytes_per_second = uint64_t{4} << 20;
  int call_attempts = 4;
  transport::Micros retry_backoff = 50'000;
  // Balancer loop.
  bool auto_balance = true;
  transport::Micros balance_interval = 500'000;
  // A balancer round also starts as soon as a move it started ends or a node is added or removed,
  // without waiting for the rest of balance_interval; the loop looks for that every balance_poll
  // (0: only every balance_interval).
  transport::Micros balance_poll = 10'000;
  uint32_t max_moves_in_flight = 2;
  uint32_t max_moves_per_node = 1;
  uint64_t split_bytes = 0;  // Θmax: split buckets above it; 0 = never
  uint64_t merge_bytes = 0;  // Θmin: merge adjacent buckets on the same node below it; 0 = never
  // Merges never take the bucket count below this (0: no floor; BalancerOptions::min_buckets).
  uint32_t min_buckets = 0;
  // Move throttle: after each move, its task pauses as long as the move's bytes take at this
  // rate; 0 = unthrottled. While a node joined at 1 GiB on 2 cores, the default cut the loss of
  // 4 saturating clients from 35% to 11% (medians) for 3x the time to balance
  // (docs/results/rebalance.md).
  uint64_t max_bytes_per_second = kDefaultMoveBytesPerSecond;
  // Catch-up rounds before fencing, and the backlog (changes per round) that allows the fence.
  uint32_t catch_up_rounds = 4;
  uint32_t fence_backlog = 64;
  transport::Micros node_timeout = 3'000'000;  // no heartbeat for this long = down
  // Replication (docs/design/replication.md §4). A replicated bucket's primary with no heartbeat
  // for failover_timeout is replaced by its most advanced backup, once the read lease
  // (read_lease + clock_drift, as the nodes use) it may still hold has run out; the replica
  // manager looks every replica_poll.
  transport::Micros failover_timeout = 1'000'000;
  transport::Micros read_lease = 1'000'000;
  transport::Micros clock_drift = 100'000;
  transport::Micros replica_poll = 100'000;
  // A copy move of a replicated bucket whose destination still holds a copy that is a prefix of
  // the primary's history, within the primary's log retention, resumes it from that log instead
  // of a snapshot (replication.md §6, "Log retention"). Off: every copy is rebuilt from a
  // snapshot (for comparisons; the safety rules are the same either way).
  bool resume_copies_from_log = true;
  // Copies that nodes hold outside a bucket's replicas (replication.md §6.1, "Copies outside the
  // replicas", HeldCopies): a repair prefers their nodes, and once the bucket has been whole (K
  // replicas, none down, no move) for this long without a break, the coordinator drops them.
  transport::Micros stale_copy_grace = kDefaultStaleCopyGrace;
};

// A committed move's fence window (from the source's fence to the commit published: the time
// writes to the bucket wait), split into its steps in order.
struct FenceWindow {
  int64_t fence_call_micros = 0;  // the source's Fence call (it stops taking writes for the bucket)
  int64_t drain_micros = 0;       // the destination catching up to the fence's sequence (0: switch)
  // Of drain_micros, as the destination measured them: reading the source's changes, and
  // applying them (the rest is the call itself and waits between rounds).
  int64_t drain_read_micros = 0;
  int64_t drain_apply_micros = 0;
  int64_t commit_micros = 0;  // the map edit (COMMIT, or SWITCH) stored and published

  [[nodiscard]] int64_t total_micros() const {
    return fence_call_micros + drain_micros + commit_micros;
  }
};

// Progress of every move since the coordinator started (this incarnation).
struct MoveProgress {
  uint64_t started = 0;
  uint64_t committed = 0;
  uint64_t aborted = 0;
  uint64_t finished = 0;
  uint64_t in_flight = 0;
  // Bytes of moves started (aborted ones included): at BEGIN the size the balancer planned the
  // move with (0 for a MoveBucket call), corrected to the exported size once a copy-then-switch
  // move has exported its snapshot (a switch-then-copy move keeps the planned size: it copies in
  // pages). It grows as moves start, so a progress bar's total is the Plan of the change.
  uint64_t bytes_planned = 0;
  // Bytes copied to destinations so far: an ingested snapshot, or each switch-then-copy page.
  // Grows during a move, so a rate and an ETA can be computed from it.
  uint64_t bytes_copied = 0;
  uint64_t bytes_moved = 0;  // exported bytes of committed moves: it jumps at each COMMIT
  // Key + body bytes of the changes committed copy-then-switch moves caught up with from their
  // source's log (rounds and drain), and how many of those moves resumed a copy the destination
  // held, with no snapshot at all (replication.md §6).
  uint64_t bytes_caught_up = 0;
  uint64_t copies_resumed = 0;
  std::vector<FenceWindow> fence_windows;     // one per committed move, in commit order
  std::map<NodeId, int64_t> first_commit_to;  // time a node first received a bucket
  std::vector<std::string> abort_reasons;     // the latest few
};

// The balancer's split (Θmax) and merge (Θmin) thresholds; 0 turns a rule off.
struct Thresholds {
  uint64_t split_bytes = 0;
  uint64_t merge_bytes = 0;
};

// Bounds of a threshold set by SetThresholds (CoordinatorOptions are not checked: tests and the
// simulation use tiny buckets).
inline constexpr uint64_t kMinThresholdBytes = uint64_t{64} << 10;  // 64 KiB
inline constexpr uint64_t kMaxThresholdBytes = uint64_t{64} << 30;  // 64 GiB

// kInvalidArgument unless each non-zero threshold is within the bounds and, with both on,
// 2 * merge_bytes < split_bytes. Why: a split halves a bucket above split_bytes into two above
// split_bytes / 2 > merge_bytes, which no merge takes back; a merge joins two buckets below
// merge_bytes into one below 2 * merge_bytes < split_bytes, which no split takes back. Without
// the gap a bucket could split and merge on alternate rounds for ever.
[[nodiscard]] Status ValidateThresholds(const Thresholds& thresholds);

struct PlanSummary {
  cluster::MigrationPlan plan;
  uint64_t buckets = 0;
  uint64_t bytes = 0;
  double estimated_seconds = 0;
};

}  // namespace shoal::coordinator
