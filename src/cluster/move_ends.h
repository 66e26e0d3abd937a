#pragma once

// A move in the operator's words (`shoal plan`, `shoal status`): `from` is the copy that leaves
// (none when the move adds a copy) and `to` the copy that arrives (none when it only drops one),
// so that at K > 1 a copy replaced on a backup reads "node 2 -> node 4" rather than its
// primary's "node 1 -> node 1". A handoff (the same copies, another primary;
// docs/design/replication.md §7) moves no data: from the old primary to the new one.
//
// Thread-safety: a pure function.

#include <span>

#include "src/common/ids.h"

namespace shoal::cluster {

struct MoveEnds {
  NodeId from{0};  // 0: none
  NodeId to{0};    // 0: none
  bool handoff = false;
};

// The ends of a move from the replicas `source` (primary first) to `destination`.
[[nodiscard]] MoveEnds EndsOf(std::span<const NodeId> source, std::span<const NodeId> destination);

}  // namespace shoal::cluster
