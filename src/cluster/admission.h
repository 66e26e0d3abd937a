#pragma once

// What a storage node does with a data request for a bucket, derived from the one routing
// table of transition.h (WriteRouting, ReadRouting), so that a client's routing and a node's
// admission cannot disagree (ARCHITECTURE.md §3, FAILURE-PATTERNS.md #1: one acknowledger per
// key in every stage and mode).
//
// The rules, for a request that reaches `self` for `bucket`. Only the primary (the first node)
// of a replica set takes a client's write or a latest read: the backups of a replicated bucket
// answer WRONG_SHARD for them (docs/design/replication.md §3 step 2).
//   * No move in flight: the primary of the stable replicas serves; everyone else answers
//     WRONG_SHARD.
//   * A read that accepts any replica (Access::kReadAnyReplica, possibly stale) is served by
//     every stable replica, which never includes a copy still being built; elsewhere it is
//     admitted as a latest read.
//   * A client's request (not forwarded): the primary of the set the table names for the access
//     (writes: WriteRoute::acknowledger; reads: ReadRoute::first) admits it.
//       - It queues a write while the table says kQueue, and a source set queues reads too
//         while it is fenced: the commit may land at any moment, after which the destination
//         accepts writes the source would not see.
//       - A source whose own record says it is fenced (the fence reached it before the map)
//         queues as in kPrepare.
//       - It serves through the source (kServeViaSource) when the table names a second set
//         for the access (a write mirror, a read fallback).
//     The destination's primary, outside the named set's primary, answers kNotYet (a client
//     that routes there knows a newer map); anyone else answers WRONG_SHARD.
//   * A forwarded request (`via_move`: sent by the acknowledger of that very move to the primary
//     of the set the table names as the write mirror or the read fallback): it serves it, except a
//     write once its own record says it is sealed. A source still in kPrepare queues it (its map is
//     behind the destination's). Every other forwarded request answers WRONG_SHARD: the move
//     is over, or is another move.
//
// Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string_view>

#include "src/cluster/shard_map.h"
#include "src/cluster/transition.h"
#include "src/common/ids.h"

namespace shoal::cluster {

// What the node does with a data request right now.
enum class Admission : uint8_t {
  kServe = 0,           // serve from the local store
  kServeViaSource = 1,  // destination of a switched move: serve through the source
  kQueue = 2,           // fenced: hold the request until the map changes (bounded)
  kWrongShard = 3,      // not ours at our epoch
  kNotYet = 4,          // ours at a newer epoch than we know: learn it
};

// Whether a request reads or writes, and for a read, whether a backup may answer it.
enum class Access : uint8_t {
  kRead = 0,            // latest: the primary of the read set
  kWrite = 1,           // the primary of the acknowledging set
  kReadAnyReplica = 2,  // any stable replica (replication.md §5; possibly stale)
};

// The node's own record of the bucket's move in flight, which may run ahead of its map: the
// source learns the fence and the seal from the coordinator's calls before the map's edit.
struct LocalMoveState {
  MoveId move;
  bool fenced = false;  // copy-then-switch source: writes and reads wait for the outcome
  bool sealed = false;  // switch-then-copy source: refuses the destination's forwarded writes
};

// The admission of a request for `bucket` at node `self`. `via_move`: the request was
// forwarded by the acknowledger of that move. `local`: the node's record of the bucket's move,
// if any (ignored unless it names the map's move).
[[nodiscard]] Admission Admit(const BucketPlacement& bucket, NodeId self,
                              const std::optional<LocalMoveState>& local, Access access,
                              std::optional<MoveId> via_move);

// True for kServe and kServeViaSource: the node handles the request now.
[[nodiscard]] bool Admits(Admission admission);

[[nodiscard]] std::string_view ToString(Admission admission);
[[nodiscard]] std::string_view ToString(Access access);

}  // namespace shoal::cluster
