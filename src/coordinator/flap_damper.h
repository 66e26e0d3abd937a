#pragma once

// FlapDamper: the nodes that lost bucket copies so often lately that the balancer gives them no
// new copy for a while (docs/design/replication.md §4.1, "Flap damping"). Without it a node that
// keeps failing (a crash loop, GC pauses, a flaky link) is removed, repaired onto, and removed
// again, and every cycle copies its buckets for nothing.
//
//   - A removal is the coordinator taking the node out of a bucket's configuration (a backup
//     that stopped acknowledging, a silent backup at a failover, a replaced primary).
//   - A removal counts only if the node gained a copy since its previous counted one (NoteCopies
//     saw its copy count rise): one outage takes a node out of all its buckets over a few rounds
//     and is one removal; removed, repaired onto and removed again is two.
//   - A node with kDampAfterRemovals counted removals within kDampWindow is damped until
//     kStableFor has passed since its latest removal. Damped nodes still hold and serve the
//     copies they have; they receive no repair, balance or primary until then.
//
// State is in memory: a coordinator failover forgets it, which only lets a new coordinator
// repair onto a flapping node again before it damps it again.
//
// Thread-safety: thread-safe.

#include <cstddef>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class FlapDamper {
 public:
  static constexpr int kDampAfterRemovals = 3;
  static constexpr transport::Micros kDampWindow = 60'000'000;
  static constexpr transport::Micros kStableFor = 30'000'000;

  // How many bucket copies `node` holds in the current map (sampled every replica round).
  void NoteCopies(NodeId node, size_t copies);
  // `node` left a bucket's configuration at `now`. Returns true when this removal damps it.
  bool NoteRemoval(NodeId node, transport::Micros now);
  // The nodes damped at `now`, ascending.
  [[nodiscard]] std::vector<NodeId> Damped(transport::Micros now) const;
  // Counted removals are ascending, within kDampWindow of the latest, which is known.
  [[nodiscard]] Status CheckInvariants() const;

 private:
  struct History {
    std::vector<transport::Micros> removals;  // counted, within kDampWindow of `latest`
    transport::Micros latest = 0;             // the latest removal, counted or not
    bool removed = false;                     // some removal was noted
    bool sampled = false;                     // NoteCopies was called
    size_t copies = 0;                        // at the last NoteCopies
    bool gained = false;                      // copies rose since the last counted removal
  };

  mutable absl::Mutex mu_;
  std::map<NodeId, History> nodes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::coordinator
