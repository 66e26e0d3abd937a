#pragma once

// The stages of moving one bucket and the read/write routing they imply (ARCHITECTURE.md §3,
// docs/design/shard-map.md). A transition lives BESIDE the stable placement of its bucket in the
// ShardMap (shard_map.h): the stable replica list is the source until the commit, so rolling back
// is dropping the transition.
//
// Two modes share one stage enum:
//   copy-then-switch (paper 004 §5, ARCHITECTURE.md §3, the default):
//     kCopy -> kCatchUp -> kPrepare -> kCommitted -> kCleanup -> kDone
//     with kAborted reachable from kCopy, kCatchUp and kPrepare.
//   switch-then-copy (paper 002 §5.3-5.4; paper 001 §3.2 read/write ownership tokens):
//     kPrepare -> kCopy -> kCatchUp -> kCommitted -> kCleanup -> kDone, with kAborted reachable
//     from every stage before kCommitted. The source is fenced in kPrepare; the destination owns
//     the bucket from kCopy on, so a failed step no longer aborts the move but rolls it forward
//     (AbortsOnFailure); only the loss of the destination rolls it back (CanAbort). kCatchUp
//     seals the source before the commit (see the stage).
// kDone and kAborted are terminal and never stored in a ShardMap: the edit that reaches them
// drops the transition (they exist for move logs and node-local state).
//
// Routing (ReadRouting, WriteRouting) is a pure function of (stage, mode). The central safety
// property (FAILURE-PATTERNS.md #1): in every (stage, mode) exactly ONE replica set may
// acknowledge a write; a second set may receive a mirrored copy but never acknowledges on its
// own. Epoch fencing makes the hand-over atomic: a node refuses requests stamped with an epoch
// older than the one in which its role changed.
//
// Pure functions and value types; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/ids.h"

namespace shoal::cluster {

enum class TransitionMode : uint8_t {
  // The source serves until the fenced commit; the destination stages data invisibly
  // (paper 004 §5, ARCHITECTURE.md §3).
  kCopyThenSwitch = 0,
  // The destination owns the bucket at once and pulls the data in the background; reads try the
  // destination then the source; writes are mirrored to the source (paper 002 §5.3-5.4).
  kSwitchThenCopy = 1,
};

enum class TransitionStage : uint8_t {
  // copy-then-switch: the move is recorded (BEGIN); the source serves all reads and writes and
  // ships a snapshot of the range; the destination stages it invisibly (not served).
  // switch-then-copy (after kPrepare): the destination owns the bucket: it acknowledges writes
  // and serves reads, falling back to the source for keys not yet transferred; every write is
  // applied at the source first (which never acknowledges it on its own and decides its outcome,
  // being the complete copy), then at the destination; transferred documents never overwrite a
  // newer version at the destination. Rolls forward on failure; rolled back only when the
  // destination is lost (CanAbort).
  kCopy = 0,
  // copy-then-switch: the snapshot is staged at the destination; writes the source accepted
  // after the snapshot are forwarded in order and applied after the snapshot data. The source
  // still acknowledges every write.
  // switch-then-copy (after kCopy, the seal): the transfer is complete. The source refuses
  // forwarded writes (it is sealed and drains those in flight), so its copy of the bucket no
  // longer changes; the destination queues writes and still reads through the source, and
  // pulls the source's changes since the switch, so that a forwarded write whose reply was lost
  // but which took effect at the source reaches it before the commit. Rolls forward on
  // failure; rolled back only when the destination is lost (CanAbort).
  kCatchUp = 1,
  // copy-then-switch: the source fences writes to the bucket (queues them for a bounded time;
  // the move aborts if the bound passes), drains the backlog, and the destination confirms it
  // holds everything. Reads are still served by the source.
  // switch-then-copy (its first stage): the source fences the bucket and drains its in-flight
  // writes; nobody serves the bucket until the switch to kCopy (or the abort).
  kPrepare = 2,
  // Both modes: the commit is durable (the new map is the commit point, epoch published). The
  // stable replicas ARE the destination; the destination serves all reads and writes; the source
  // answers WRONG_SHARD and keeps its copy until no reader holds an older epoch.
  kCommitted = 3,
  // Both modes: the destination serves; the source is dropping the range (allowed only after the
  // commit is durable, FAILURE-PATTERNS.md #5).
  kCleanup = 4,
  // Terminal, never in a map: the source dropped the range and DONE is recorded; the transition
  // has been removed from the map.
  kDone = 5,
  // Terminal, never in a map: the move was rolled back before its commit; the source (the stable
  // replicas) is authoritative, the destination deletes its staged data, and messages carrying
  // this MoveId are ignored from now on (FAILURE-PATTERNS.md #6).
  kAborted = 6,
};

// Which replica set of a transition a role refers to.
enum class ReplicaRole : uint8_t {
  kSource = 0,       // the stable replicas before the commit
  kDestination = 1,  // the replicas after the commit
};

// How writes are admitted by the acknowledging set.
enum class WriteAdmission : uint8_t {
  kServe = 0,  // apply and acknowledge
  kQueue = 1,  // fenced: hold (do not reject) until the commit or abort, for a bounded time
};

// Where a read goes: `first`, then, if the key is not found there, `fallback`.
struct ReadRoute {
  ReplicaRole first = ReplicaRole::kSource;
  std::optional<ReplicaRole> fallback;
  friend bool operator==(const ReadRoute&, const ReadRoute&) = default;
};

// Where a write goes. `acknowledger` is the ONE set whose acceptance acknowledges the write.
// `mirror`, if set, must also apply the write before it is acknowledged, but never acknowledges
// a write on its own (it only accepts mirrored writes carrying the MoveId).
struct WriteRoute {
  ReplicaRole acknowledger = ReplicaRole::kSource;
  std::optional<ReplicaRole> mirror;
  WriteAdmission admission = WriteAdmission::kServe;
  friend bool operator==(const WriteRoute&, const WriteRoute&) = default;
};

[[nodiscard]] ReadRoute ReadRouting(TransitionStage stage, TransitionMode mode);
[[nodiscard]] WriteRoute WriteRouting(TransitionStage stage, TransitionMode mode);

// True for kDone and kAborted.
[[nodiscard]] bool IsTerminal(TransitionStage stage);
// True for stages whose transition may be stored in a ShardMap (not terminal).
[[nodiscard]] bool IsStorable(TransitionStage stage, TransitionMode mode);
// True when the commit has happened (kCommitted, kCleanup, kDone): the destination is stable.
[[nodiscard]] bool IsCommitted(TransitionStage stage);
// The first stage of `mode` (kCopy, or kPrepare for switch-then-copy).
[[nodiscard]] TransitionStage FirstStage(TransitionMode mode);
// The next non-abort stage of `mode` after `stage`; none for terminal stages.
[[nodiscard]] std::optional<TransitionStage> NextStage(TransitionStage stage, TransitionMode mode);
// True when the abort (rollback to the source) is safe from `stage`: every stage before the
// commit, in both modes. In a switched switch-then-copy move (kCopy, kCatchUp) the destination
// acknowledges only writes the source has applied first and answers only what the source read,
// so the source's copy is complete until the commit; once the map drops the transition the
// source refuses the move's forwarded requests, and a destination that is cut off can answer
// nothing on its own.
[[nodiscard]] bool CanAbort(TransitionStage stage, TransitionMode mode);
// True when a failed step (or recovery after a coordinator restart) aborts the move: before the
// commit, and in switch-then-copy only before the switch (kPrepare). A switched move rolls
// forward instead, since its destination already serves (it is rolled back only when the
// destination is lost: docs/design/cluster.md, "Switch-then-copy").
[[nodiscard]] bool AbortsOnFailure(TransitionStage stage, TransitionMode mode);

[[nodiscard]] std::string_view ToString(TransitionStage stage);
[[nodiscard]] std::string_view ToString(TransitionMode mode);
[[nodiscard]] std::string_view ToString(ReplicaRole role);

// The in-flight move of one bucket, kept beside its stable placement. `source` is the stable
// replica list when the move began (primary first); `destination` the replica list after the
// commit (primary first). Value type; thread-compatible.
struct BucketTransition {
  MoveId move;
  std::vector<NodeId> source;
  std::vector<NodeId> destination;
  TransitionStage stage = TransitionStage::kCopy;
  TransitionMode mode = TransitionMode::kCopyThenSwitch;

  // The replica set a role refers to.
  [[nodiscard]] const std::vector<NodeId>& Replicas(ReplicaRole role) const;
  // The replicas whose owner changes: in destination but not in source.
  [[nodiscard]] std::vector<NodeId> Incoming() const;
  // In source but not in destination.
  [[nodiscard]] std::vector<NodeId> Outgoing() const;
  // True when `node` is in source or destination.
  [[nodiscard]] bool Involves(NodeId node) const;
  // True when source and destination have the same primary: the move adds a copy or replaces a
  // backup of a replicated bucket, and the primary keeps streaming to the stable backups
  // throughout (docs/design/replication.md §6).
  [[nodiscard]] bool KeepsPrimary() const;
  // True when the destination's primary is one of the source's replicas: the primary is kept or
  // handed over to an in-sync backup (a handoff), never given to a copy still being built. The
  // stable replicas then stream from their primary throughout the move: the source's before the
  // commit, the destination's from it on (docs/design/replication.md §6-7).
  [[nodiscard]] bool PrimaryStaysInSync() const;
  [[nodiscard]] std::string DebugString() const;

  friend bool operator==(const BucketTransition&, const BucketTransition&) = default;
};

}  // namespace shoal::cluster
