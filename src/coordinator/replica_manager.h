#pragma once

// ReplicaManager: the coordinator's part in the failure handling of replicated buckets (K > 1;
// docs/design/replication.md §4). PacificA style: the configuration of every bucket (its
// replicas, primary first, and its term) is the ShardMap's, changed only by map edits.
//
//   REMOVAL (§4.1): a primary reports a backup that stopped acknowledging (ReplicaReport). The
//     report counts only from the bucket's primary at the bucket's current term; the backup
//     leaves the bucket in one edit, never below min_in_sync (the answer is then
//     NOT_ENOUGH_REPLICAS and the backup stays listed, so that it stays eligible). A silent
//     backup is silent on the primary's one stream to it, so the same edit takes it out of the
//     primary's other buckets as well (floor permitting, none moving).
//   FAILOVER (§4.2): a bucket whose primary sent no heartbeat for failover_timeout, or reports
//     the bucket fenced at its term (it restarted, §4.4, or its store changed, §4.6), gets a new
//     primary in four steps:
//       1. SEAL every reachable backup at the term: it refuses the old primary's stream from
//          then on, so the old primary can neither commit a write nor renew its read lease, and
//          it answers its position, its store id and the age of its last acknowledgement;
//       2. WAIT until read_lease + clock_drift has passed since the oldest of those last
//          acknowledgements: the old primary's lease, which needs every backup, has run out;
//       3. CHOOSE, among the answers whose store id is the one the map binds, the highest
//          (term, rseq): write-all puts every acknowledged write on each of them, and within a
//          term each backup holds a prefix of the primary's history, so the highest holds the
//          others' and loses the fewest unacknowledged writes (Kafka KIP-101);
//       4. COMMIT RemoveReplica of the backups that did not answer (the old primary still
//          counts towards min_in_sync) and PromoteReplica (a new term; the old primary leaves
//          the bucket). So the winner is the most advanced copy of every replica the bucket
//          keeps; where the floor would keep a silent backup, which may be ahead of the winner,
//          nothing is promoted until it answers.
//     A bucket none of whose backups answers is not promoted: it stays unavailable until one
//     answers, and no copy outside its replicas is ever chosen (§4.6).
//   A backup that answers but cannot catch up (a gap, a divergent copy) is reported broken and
//   leaves even below the floor (DropReplica): it holds nothing the bucket needs.
//   Every removal is noted in Membership::flaps(): a node removed again and again gets no new
//     copy for a while (FlapDamper).
//   STORES (§4.6): the first store id a node reports is bound in the map (BindStore); a different
//     one later (a wiped or replaced directory) resets the node (ResetNode) once it is no
//     bucket's primary, so that copy is rebuilt and never promoted.
//
// Thread-safety: thread-safe; Run is one task; no lock is held across a runtime yield.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/coordinator/coordinator_options.h"
#include "src/coordinator/map_committer.h"
#include "src/coordinator/membership.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class ReplicaManager {
 public:
  ReplicaManager(transport::Runtime& runtime, std::shared_ptr<MapCommitter> committer,
                 std::shared_ptr<Membership> membership, const CoordinatorOptions& options);

  // A primary's report of a backup (REMOVAL).
  [[nodiscard]] transport::Response HandleReport(const transport::ReplicaReportRequest& report);
  // What a heartbeat says of the node's store and fenced buckets.
  void NoteHeartbeat(const transport::HeartbeatRequest& heartbeat);
  // Runs rounds every replica_poll until the runtime stops.
  void Run();
  // One round: binds or resets stores, and fails over every bucket that needs it.
  [[nodiscard]] Status Round();

 private:
  struct Answer {
    NodeId node;
    storage::ReplicaPosition position;
    uint64_t micros_since_ack = UINT64_MAX;
  };
  // FAILOVER of `buckets` (each at its term), all with the primary `primary`. `silent`: the
  // primary stopped answering (not only restarted): the promotion also waits until it has been
  // silent for as long as a read lease lasts, which bounds the lease it may hold from this
  // coordinator's heartbeat answers (ReplicationLog::Excuse).
  [[nodiscard]] Status Failover(NodeId primary, const std::vector<transport::BucketTerm>& buckets,
                                bool silent);
  [[nodiscard]] Status SyncStores();
  // `node` left a bucket's configuration (flap damping, FlapDamper).
  void NoteRemoval(NodeId node);
  // Every node's copy count in `map` (a copy gained re-arms flap counting, FlapDamper).
  void NoteCopies(const cluster::ShardMap& map);
  // True the first time a bucket at a term cannot fail over (one log line per term, not per
  // round).
  bool WarnOnce(const transport::BucketTerm& at);

  transport::Runtime& runtime_;
  const std::shared_ptr<MapCommitter> committer_;
  const std::shared_ptr<Membership> membership_;
  const CoordinatorOptions options_;

  mutable absl::Mutex mu_;
  // From the latest heartbeat of each node.
  std::map<NodeId, uint64_t> store_ids_ ABSL_GUARDED_BY(mu_);
  std::map<NodeId, uint64_t> incarnations_ ABSL_GUARDED_BY(mu_);
  std::map<NodeId, std::vector<transport::BucketTerm>> fenced_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<BucketId, Term>> warned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::coordinator
