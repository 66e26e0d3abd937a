#pragma once

// Rebalancer: the process that moves documents when the shard count changes (paper 000 §6.5,
// Algorithm 5). It is an ordinary client of the shards and of the metadata store and keeps no
// state of its own: every step reads what it needs from the shards and the metadata, and every
// write is idempotent, so it can be killed at any moment and Run() again, in any process, with
// no special provisions (§7.1).
//
// Run() drives the collection from whatever state it is in back to `normal`:
//   enter_rebalance / enter_cleanup / leave_rebalance: completes the barrier if every live
//       client has joined (also when there are no clients), otherwise waits for it;
//   rebalancing: for every shard, every document of the old version goes to its new shard
//       (re-stamped in place or copied, MoveDocument), then commits enter_cleanup;
//   cleanup: waits until every query open before cleanup has ended (§6.5), removes every
//       old-version document and every tombstone (RemoveObsolete), then commits leave_rebalance.
// Removing old versions and tombstones in `cleanup`, when no client operation can run, rather
// than at the end of `rebalancing` as the pseudo-code does, keeps an update or add that read the
// old shard before the removal from resurrecting a deleted document.
//
// Thread-safety: one Run() at a time per object; several rebalancers on one collection are safe
// (they do the same idempotent work), if wasteful.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "src/clientside/shard_catalog.h"
#include "src/clientside/sharding_state.h"
#include "src/metadata/metadata_store.h"

namespace shoal::clientside {

struct RebalancerOptions {
  metadata::MetadataStore* metadata = nullptr;
  std::shared_ptr<ShardCatalog> catalog{};
  std::string collection{};
  size_t page_size = 256;
  // Checked before every shard write and every state transition; when it returns true the
  // rebalancer stops at once with kCancelled, as if killed (tests kill it at random points).
  std::function<bool()> stop_requested{};
  // How long to wait for a barrier or a query between two looks at the metadata (a watch wakes
  // it earlier).
  std::chrono::milliseconds poll{20};
};

struct RebalancerStats {
  uint64_t moved = 0;        // documents copied to another shard
  uint64_t restamped = 0;    // documents re-stamped in place
  uint64_t removed = 0;      // old-version documents and tombstones removed
  uint64_t transitions = 0;  // state transitions committed by this rebalancer
};

class Rebalancer {
 public:
  explicit Rebalancer(RebalancerOptions options);

  // OK once the state is `normal`; kCancelled if stopped; other errors from shards or metadata.
  [[nodiscard]] Status Run();
  [[nodiscard]] const RebalancerStats& stats() const { return stats_; }

 private:
  [[nodiscard]] Status Stopped() const;
  [[nodiscard]] Status CopyPass(const ShardingState& s);
  [[nodiscard]] Status WaitForQueries();
  [[nodiscard]] Status RemovePass(const ShardingState& s);
  void WaitForChange();

  const RebalancerOptions options_;
  const StateKeys keys_;
  RebalancerStats stats_{};
};

}  // namespace shoal::clientside
