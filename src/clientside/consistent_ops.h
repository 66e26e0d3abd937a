#pragma once

// The per-document algorithms of paper 000 §6, as free functions over the two shards of one
// document: the naïve ones used in `normal` (and when the old and the new shard coincide) and
// the consistent Algorithms 1-4 used in `rebalancing` when they differ, plus the two
// per-document steps of the rebalancer (Algorithm 5). Stateless; thread-safe as the shards are.
//
// Invariants these rely on and keep, during rebalancing (§6):
//  I1 Only the rebalancer modifies or removes documents on a document's old shard.
//  I2 Clients mutate a document only on its new shard, always writing the new version.
//  I3 At every moment a live document exists on its old shard (old version) or its new shard.
//  I4 A tombstone exists only on a document's new shard, with the new version, and only the
//     rebalancer removes it, in `cleanup`, when no client operation is running.
//  I5 Among the copies of a key, the one of the highest version is the current one.
//
// Departures from the paper's pseudo-code, each closing a race the interleaving test finds:
//  - Algorithm 1 (add) ends with the parameterized upsert S_new ∪_{tombstone} {d} instead of a
//    plain upsert, so that two concurrent adds of a new key cannot both succeed.
//  - Algorithms 2 and 3 use S_new ∪_{¬tombstone} {d}: an update or a delete racing with a delete
//    returns NOT_FOUND instead of resurrecting or deleting twice.
//  - Algorithm 4 (get) drops its third read, and Algorithms 1 and 4 look the key up on the old
//    shard concurrently with the new shard when the shards are remote (ShardBackend::RemoteCalls):
//    by I1, I2 and removals only in `cleanup`, the old copy cannot change while a client operation
//    runs, so when it is read does not matter (docs/design/client-side-sharding.md).
//
// Results: OK, kAlreadyExists (DUPLICATE), kNotFound, or a shard failure.

#include <cstdint>
#include <string_view>

#include "src/clientside/shard_backend.h"

namespace shoal::clientside {

// Hash-mod-n routing (Algorithm 5's COMPUTESHARD, 0-based): XXH64 of the primary key mod n.
[[nodiscard]] ShardIndex ShardFor(std::string_view primary_key, uint32_t shard_count);

// --- naïve sharding (Table 1, `normal`) -----------------------------------------------------
[[nodiscard]] Status NaiveAdd(ShardBackend& shard, const ShardDocument& d);
[[nodiscard]] Status NaiveUpdate(ShardBackend& shard, const ShardDocument& d);
[[nodiscard]] Status NaiveDelete(ShardBackend& shard, std::string_view primary_key);
[[nodiscard]] StatusOr<ShardDocument> NaiveGet(ShardBackend& shard, std::string_view primary_key);

// --- consistent algorithms (Table 1, `rebalancing`; old != new) --------------------------------
// `d.version` must be the new version.
[[nodiscard]] Status ConsistentAdd(ShardBackend& old_shard, ShardBackend& new_shard,
                                   const ShardDocument& d);  // Algorithm 1
[[nodiscard]] Status ConsistentUpdate(ShardBackend& old_shard, ShardBackend& new_shard,
                                      const ShardDocument& d);  // Algorithm 2
[[nodiscard]] Status ConsistentDelete(ShardBackend& old_shard, ShardBackend& new_shard,
                                      std::string_view primary_key,
                                      MapVersion new_version);  // Algorithm 3
[[nodiscard]] StatusOr<ShardDocument> ConsistentGet(ShardBackend& old_shard,
                                                    ShardBackend& new_shard,
                                                    std::string_view primary_key);  // Algorithm 4

// --- the rebalancer's per-document steps (Algorithm 5) -----------------------------------------
// Moves `d` (read from `source` with the old version) to `target`: re-stamps it in place when
// they are the same shard, otherwise inserts a new-version copy, ignoring a conflict (the key
// was already moved, written or deleted there). Idempotent.
[[nodiscard]] Status MoveDocument(ShardBackend& source, ShardBackend& target,
                                  const ShardDocument& d, MapVersion new_version, bool same_shard);
// Removes `d` from `shard` if it still has the old version or is a tombstone. Idempotent.
[[nodiscard]] Status RemoveObsolete(ShardBackend& shard, const ShardDocument& d,
                                    MapVersion old_version);

}  // namespace shoal::clientside
