#pragma once

// The collection-wide state every client of a client-side sharded collection agrees on (paper
// 000 §4), its encoding in the MetadataStore, and the barrier protocol between its states.
//
//   normal ──(admin: BeginShardCountChange)──▶ enter_rebalance ──(last client in)──▶ rebalancing
//     ▲                                                                                │
//     │                                                           (rebalancer: copies done)
//   (last client in)                                                                   ▼
//   leave_rebalance ◀──(rebalancer: removals done)── cleanup ◀──(last client in)── enter_cleanup
//
// Table 1: `normal` runs the naïve algorithm, `rebalancing` the consistent one (Algorithms 1-4,
// 6); in the four other states client requests are queued, not failed.
//
// What has become true in each state (v = `version`, the new map version once a change began):
//   normal           every document is on shard h(pk) mod `shards`, with version v, no tombstone.
//   enter_rebalance  the new shards are available; clients drain and join the barrier.
//   rebalancing      every client runs the consistent algorithms with v_old = v-1, v_new = v;
//                    the rebalancer copies old-version documents (Algorithm 5, first loop).
//   enter_cleanup    every old-version document has a copy (or a newer write, or a tombstone)
//                    on its new shard; clients drain and join.
//   cleanup          no client operation runs; the rebalancer waits for the queries opened
//                    before, then removes old-version documents and tombstones.
//   leave_rebalance  the `normal` invariant holds for `shards`; clients drain and join.
//
// Metadata layout under "clientside/<collection>/":
//   state                                   the ShardingState (persistent, CAS on its version)
//   members/<client>                        ephemeral: one per live client session
//   barrier/<version>/<state>/<client>      ephemeral: the client has drained and joined
//   queries/<client>/<n>                    ephemeral: an open query cursor
// A barrier completes when every live member has joined it; whoever sees that first (a client,
// or the rebalancer) commits the next state with a compare-and-set on the state key, so exactly
// one transition happens. A client that dies leaves the member set and stops blocking barriers.

#include <cstdint>
#include <string>
#include <string_view>

#include "src/clientside/shard_backend.h"
#include "src/common/status.h"
#include "src/metadata/metadata_store.h"

namespace shoal::clientside {

enum class ClientState : uint8_t {
  kNormal,
  kEnterRebalance,
  kRebalancing,
  kEnterCleanup,
  kCleanup,
  kLeaveRebalance,
};

// Table 1 of paper 000.
enum class ClientAlgorithm : uint8_t { kNaive, kNone, kConsistent };

[[nodiscard]] std::string_view ClientStateName(ClientState state);
[[nodiscard]] ClientAlgorithm AlgorithmFor(ClientState state);
[[nodiscard]] bool IsBarrier(ClientState state);

// Value type; thread-compatible.
struct ShardingState {
  ClientState state = ClientState::kNormal;
  MapVersion version{1};    // in normal: of every document; otherwise the new version
  uint32_t old_shards = 1;  // n_old (== shards in normal)
  uint32_t shards = 1;      // n_new: the shard count being moved to (or in use)

  friend bool operator==(const ShardingState&, const ShardingState&) = default;

  [[nodiscard]] MapVersion old_version() const {
    return state == ClientState::kNormal ? version : MapVersion(version.value() - 1);
  }
  // Shards 0 .. span-1 may hold documents: max(old_shards, shards).
  [[nodiscard]] uint32_t span() const { return old_shards > shards ? old_shards : shards; }

  // The state after the barrier or the rebalancer step that ends this one; FailedPrecondition
  // from normal (use BeginChange).
  [[nodiscard]] StatusOr<ShardingState> Next() const;
  // normal → enter_rebalance towards `new_shards`, with version + 1.
  [[nodiscard]] StatusOr<ShardingState> BeginChange(uint32_t new_shards) const;

  [[nodiscard]] std::string Encode() const;
  [[nodiscard]] static StatusOr<ShardingState> Decode(std::string_view text);
  [[nodiscard]] Status CheckInvariants() const;
  [[nodiscard]] std::string DebugString() const { return Encode(); }
};

// The metadata keys of one collection.
class StateKeys {
 public:
  explicit StateKeys(std::string_view collection)
      : root_("clientside/" + std::string(collection) + "/") {}
  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] std::string state() const { return root_ + "state"; }
  [[nodiscard]] std::string members() const { return root_ + "members/"; }
  [[nodiscard]] std::string member(std::string_view client) const {
    return members() + std::string(client);
  }
  [[nodiscard]] std::string barrier(const ShardingState& s) const;
  [[nodiscard]] std::string queries() const { return root_ + "queries/"; }

 private:
  std::string root_;
};

struct VersionedState {
  ShardingState state{};
  uint64_t key_version = 0;  // of the state key, for compare-and-set
};

// Creates the collection's state (normal, version 1, `shards` shards); OK if it already exists.
[[nodiscard]] Status InitShardingState(metadata::MetadataStore& store, std::string_view collection,
                                       uint32_t shards);
[[nodiscard]] StatusOr<VersionedState> ReadShardingState(metadata::MetadataStore& store,
                                                         const StateKeys& keys);
// normal → enter_rebalance towards `new_shards` (paper §4: the new shards must already be
// available in every client's catalog). FailedPrecondition unless the state is normal.
[[nodiscard]] Status BeginShardCountChange(metadata::MetadataStore& store,
                                           std::string_view collection, uint32_t new_shards);
// Commits `from.Next()` iff the state key still has `from.key_version`. OK also when another
// process made the same transition first.
[[nodiscard]] Status CommitNext(metadata::MetadataStore& store, const StateKeys& keys,
                                const VersionedState& from);
// If the state is a barrier that every live member has joined, commits the next state. Returns
// whether the state is (now) past that barrier.
[[nodiscard]] StatusOr<bool> TryCompleteBarrier(metadata::MetadataStore& store,
                                                const StateKeys& keys);

}  // namespace shoal::clientside
