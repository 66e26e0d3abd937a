#pragma once

// Membership: which nodes the coordinator hears from (liveness), and which were added and wait
// for their two-phase bootstrap (paper 001 §3.2). The ShardMap says who is a member; this says
// who is alive, and flaps() which nodes lost copies too often lately (FlapDamper).
//
// Invariants:
//   - a node is down when no heartbeat came for node_timeout; a node never heard from by this
//     incarnation gets the benefit of the doubt for one node_timeout from the start;
//   - a node has checked in (CheckIn) only when it sent a heartbeat within node_timeout or
//     answered an InstallMap call now: a node id with no process behind it never checks in, so
//     it is never added nor made a move's destination;
//   - one store speaks for a node id at a time (AdmitStore): while the store last admitted for
//     it was heard within node_timeout (or, before any heartbeat since the start, the store the
//     map binds to it, for one node_timeout), a heartbeat from another store is refused. A
//     second process started with the same --id never takes the id over, and a node whose data
//     directory was replaced is admitted once its old process has been silent for node_timeout.
//
// Thread-safety: thread-safe; mu_ is never held across a runtime yield (CheckIn calls and
// sleeps without it).

#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/coordinator/flap_damper.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class Membership {
 public:
  Membership(transport::Runtime& runtime, transport::Micros node_timeout,
             transport::Micros call_timeout);

  // A heartbeat from `node` now. True when the node was down before it (it came back).
  bool RecordHeartbeat(NodeId node);
  // OK when the heartbeat of `node` from store `store_id` may count (see the invariant above;
  // `bound_store` is the map's binding, 0 if none; a `store_id` of 0 is not checked), and
  // `store_id` is now the node's; kFailedPrecondition naming the other store otherwise.
  [[nodiscard]] Status AdmitStore(NodeId node, uint64_t store_id, uint64_t bound_store);
  [[nodiscard]] bool IsDown(NodeId node) const;
  // A heartbeat within node_timeout.
  [[nodiscard]] bool HeardFrom(NodeId node) const;
  // Time since the last heartbeat of `node` (since this incarnation started, if none came).
  [[nodiscard]] transport::Micros SilentFor(NodeId node) const;
  // The members of `map` that are down.
  [[nodiscard]] std::set<NodeId> DownNodes(const cluster::ShardMap& map) const;
  // OK once `node` has checked in: heard from lately (waiting up to `grace` for a node whose
  // process is starting), or it answers an InstallMap of `state` now, which counts as a
  // heartbeat. kFailedPrecondition otherwise, naming the node and the error.
  [[nodiscard]] Status CheckIn(NodeId node, const transport::ClusterState& state,
                               transport::Micros grace = 0);

  // Nodes added whose pre-bootstrap is not planned yet.
  void AddJoining(NodeId node);
  // Takes `node` out of the joining set; false if it was not in it.
  bool TakeJoining(NodeId node);
  [[nodiscard]] std::set<NodeId> Joining() const;

  // Copy counts and removals from bucket configurations (ReplicaManager), and the nodes they
  // damp (BalancerLoop).
  [[nodiscard]] FlapDamper& flaps() { return flaps_; }

 private:
  [[nodiscard]] bool IsDownLocked(NodeId node) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] bool HeardFromLocked(NodeId node) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  transport::Runtime& runtime_;
  const transport::Micros node_timeout_;
  const transport::Micros call_timeout_;
  const transport::Micros started_;  // liveness is judged from here on

  mutable absl::Mutex mu_;
  std::map<NodeId, transport::Micros> last_heartbeat_ ABSL_GUARDED_BY(mu_);
  struct HeardStore {
    uint64_t id = 0;
    transport::Micros at = 0;
  };
  std::map<NodeId, HeardStore> stores_ ABSL_GUARDED_BY(mu_);            // the store admitted last
  std::set<std::pair<NodeId, uint64_t>> refused_ ABSL_GUARDED_BY(mu_);  // logged once each
  std::set<NodeId> joining_ ABSL_GUARDED_BY(mu_);
  FlapDamper flaps_;
};

}  // namespace shoal::coordinator
