#pragma once

// Move: the steps of one bucket move, for the MoveExecutor (move_executor.h states the
// protocols and their invariants). One object per move holds what every step needs: the bucket,
// the move id, the source and the destination. Internal to the coordinator.
//
// Thread-compatible: a Move is used by the one task that runs the move.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/cluster/transition.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/coordinator/move_executor.h"

namespace shoal::coordinator::internal {

class Move {
 public:
  Move(MoveExecutor& executor, BucketId bucket, MoveId move, NodeId source, NodeId destination)
      : x_(executor), bucket_(bucket), move_(move), source_(source), destination_(destination) {}

  // The protocol of each mode from BEGIN on (the move is in flight in the progress counters).
  [[nodiscard]] Status CopyThenSwitch(uint64_t planned_bytes);
  [[nodiscard]] Status SwitchThenCopy();
  // A replicated bucket's primary handed to the backup `destination` (docs/design/replication.md
  // §7): no data moves. The fence stops the primary (writes and reads queue) and answers once
  // every backup holds everything it ordered; COMMIT names the new primary under a new term.
  [[nodiscard]] Status Handoff();
  // From the switch on: transfer, SEAL, catch-up, COMMIT, cleanup. Also run by recovery.
  // `switch_sequence`: the source's last sequence at its fence before the switch, when this
  // incarnation knows it (the catch-up starts there; otherwise a second full transfer runs).
  [[nodiscard]] Status RollForwardSwitched(std::optional<uint64_t> switch_sequence);
  // Cleanup and DONE of a committed move.
  [[nodiscard]] Status FinishCommitted();
  // Stores ABORT unless the move is committed or gone; the destination drops its staged data.
  // The store's error if it could not be stored (the transition then stays: an orphan).
  [[nodiscard]] Status Abort(const Status& reason);

 private:
  // How a whole transfer of a switched move ended.
  enum class TransferOutcome {
    kDone,             // the destination holds the whole bucket as of each page
    kNotOurs,          // the move left `stage` (another task finished or resolved it)
    kDestinationLost,  // the destination does not answer and is down
  };

  // A step before the commit (or switch) failed: abort, unless this incarnation was stopped.
  [[nodiscard]] Status Fail(const Status& status);
  [[nodiscard]] Status AdvanceStage(cluster::TransitionStage stage,
                                    std::optional<std::string> log = std::nullopt);
  // COMMIT (the commit point: the map with the committed transition), with the move log's
  // record "COMMIT <route><suffix>".
  [[nodiscard]] Status Commit(std::string_view suffix = "");
  // Catch-up rounds of the destination from `after_sequence`: until fewer than fence_backlog
  // changes came in a round or, with `until_sequence`, once up to it. The position reached, or
  // the error of a round (a node is down, the source's log is gone).
  // Adds the bytes applied to *bytes when given.
  [[nodiscard]] StatusOr<uint64_t> CatchUpRounds(uint64_t after_sequence,
                                                 std::optional<uint64_t> until_sequence,
                                                 uint64_t* bytes = nullptr);
  // A replicated bucket's copy move: asks the destination to resume the copy it holds from the
  // primary's log (replication.md §6, "Log retention"). The engine sequence its catch-up starts
  // after if it did; nullopt if the copy is to be rebuilt from a snapshot (none held, another
  // store, divergent, not retained, or a node that does not know the request). The call's error
  // otherwise (a node does not answer, this incarnation was stopped): the move fails.
  [[nodiscard]] StatusOr<std::optional<uint64_t>> ResumeFromLog();
  // Pulls the whole bucket into the destination while the move stays in `stage`, waiting out
  // nodes that do not answer (the source as long as it takes; the destination until it is
  // down). Adds to *bytes.
  [[nodiscard]] StatusOr<TransferOutcome> TransferSwitched(cluster::TransitionStage stage,
                                                           uint64_t* bytes);
  // A whole transfer in `stage`: nullopt to go on, else what the roll-forward returns.
  [[nodiscard]] std::optional<Status> TransferOrEnd(cluster::TransitionStage stage,
                                                    uint64_t* bytes);
  // A switched move whose destination is down goes back to its source (cluster::CanAbort).
  [[nodiscard]] Status RollBackSwitched();
  // The seal's fence at the source (kCatchUp), retried until it answers: the source's last
  // sequence, after which it takes no write of the bucket. kAborted if the move left kCatchUp.
  [[nodiscard]] StatusOr<uint64_t> SealSource();
  // "<bucket> <source> -> <destination>", for the move log.
  [[nodiscard]] std::string Route() const;

  MoveExecutor& x_;
  const BucketId bucket_;
  const MoveId move_;
  const NodeId source_;
  const NodeId destination_;
};

}  // namespace shoal::coordinator::internal
