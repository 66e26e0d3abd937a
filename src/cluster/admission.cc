#include "src/cluster/admission.h"

#include <algorithm>
#include <vector>

namespace shoal::cluster {
namespace {

bool Contains(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

bool IsPrimaryOf(const std::vector<NodeId>& nodes, NodeId node) {
  return !nodes.empty() && nodes.front() == node;
}

// A forwarded request: served by the set the table names as the second set for the access.
Admission AdmitForwarded(const BucketTransition& t, NodeId self, bool sealed, Access access,
                         MoveId via_move) {
  if (t.move != via_move) return Admission::kWrongShard;  // another move, or one that is over
  const std::optional<ReplicaRole> target = access == Access::kWrite
                                                ? WriteRouting(t.stage, t.mode).mirror
                                                : ReadRouting(t.stage, t.mode).fallback;
  if (target.has_value() && IsPrimaryOf(t.Replicas(*target), self)) {
    return access == Access::kWrite && sealed ? Admission::kWrongShard : Admission::kServe;
  }
  // The acknowledger has seen the switch and we have not: wait for the map.
  if (t.stage == TransitionStage::kPrepare && IsPrimaryOf(t.source, self)) {
    return Admission::kQueue;
  }
  return Admission::kWrongShard;
}

}  // namespace

Admission Admit(const BucketPlacement& bucket, NodeId self,
                const std::optional<LocalMoveState>& local, Access access,
                std::optional<MoveId> via_move) {
  if (access == Access::kReadAnyReplica) {
    if (via_move.has_value()) return Admission::kWrongShard;  // never forwarded
    // The stable replicas hold complete copies: a copy being built is never among them.
    if (Contains(bucket.replicas, self)) return Admission::kServe;
    access = Access::kRead;
  }
  if (!bucket.transition.has_value()) {
    if (via_move.has_value()) return Admission::kWrongShard;  // that move is over
    return IsPrimaryOf(bucket.replicas, self) ? Admission::kServe : Admission::kWrongShard;
  }
  const BucketTransition& t = *bucket.transition;
  const bool this_move = local.has_value() && local->move == t.move;
  if (via_move.has_value()) {
    return AdmitForwarded(t, self, this_move && local->sealed, access, *via_move);
  }
  const WriteRoute write = WriteRouting(t.stage, t.mode);
  const ReadRoute read = ReadRouting(t.stage, t.mode);
  const ReplicaRole role = access == Access::kWrite ? write.acknowledger : read.first;
  if (IsPrimaryOf(t.Replicas(role), self)) {
    if (access == Access::kWrite && write.admission == WriteAdmission::kQueue) {
      return Admission::kQueue;
    }
    if (role == ReplicaRole::kSource &&
        (write.admission == WriteAdmission::kQueue || (this_move && local->fenced))) {
      return Admission::kQueue;
    }
    const bool second_set =
        access == Access::kWrite ? write.mirror.has_value() : read.fallback.has_value();
    return second_set ? Admission::kServeViaSource : Admission::kServe;
  }
  // A client that routes here knows a newer map than ours (the commit or the switch): learn it.
  if (role == ReplicaRole::kSource && IsPrimaryOf(t.destination, self)) return Admission::kNotYet;
  return Admission::kWrongShard;
}

bool Admits(Admission admission) {
  switch (admission) {
    case Admission::kServe:
    case Admission::kServeViaSource:
      return true;
    case Admission::kQueue:
    case Admission::kWrongShard:
    case Admission::kNotYet:
      return false;
  }
  return false;
}

std::string_view ToString(Admission admission) {
  switch (admission) {
    case Admission::kServe:
      return "serve";
    case Admission::kServeViaSource:
      return "serve-via-source";
    case Admission::kQueue:
      return "queue";
    case Admission::kWrongShard:
      return "wrong-shard";
    case Admission::kNotYet:
      return "not-yet";
  }
  return "?";
}

std::string_view ToString(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
    case Access::kReadAnyReplica:
      return "read-any-replica";
  }
  return "?";
}

}  // namespace shoal::cluster
