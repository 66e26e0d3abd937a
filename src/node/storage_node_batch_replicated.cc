// StorageNode::ApplyBatchReplicated: the AT ONCE path of a batch write with writes of buckets
// this node is the replicated primary of (storage_node_batch.cc, REPLICATED;
// docs/design/replication.md §3). The writes of each replicated bucket become one entry, so a
// batch costs each backup one stream message and one sync, and the primary one sync, whatever
// its size. Writes of other buckets in the batch go to the store as one ApplyEach and are
// acknowledged after the same sync.

#include <map>
#include <utility>
#include <vector>

#include "src/node/storage_node.h"

namespace shoal::node {

namespace {

// One replicated bucket's slots of the batch, and the entry they were ordered as.
struct BucketSlots {
  std::vector<size_t> slots;
  uint64_t rseq = 0;  // 0: nothing written (every slot refused or a no-op)
};

}  // namespace

std::vector<StatusOr<storage::MutationResult>> StorageNode::ApplyBatchReplicated(
    std::span<const storage::Mutation> mutations, const AdmittedAtOnce& admitted) {
  std::vector<StatusOr<storage::MutationResult>> results(mutations.size(),
                                                         InternalError("not applied"));
  std::map<BucketId, BucketSlots> replicated;
  std::vector<size_t> plain;
  for (size_t i = 0; i < mutations.size(); ++i) {
    if (admitted.replicated[i]) {
      replicated[admitted.buckets[i]].slots.push_back(i);
    } else {
      plain.push_back(i);
    }
  }
  auto subset = [&](const std::vector<size_t>& slots) {
    std::vector<storage::Mutation> out;
    out.reserve(slots.size());
    for (size_t i : slots) out.push_back(mutations[i]);
    return out;
  };
  if (!plain.empty()) {
    StatusOr<std::vector<StatusOr<storage::MutationResult>>> applied =
        store_->ApplyEach(subset(plain), storage::WalSync::kDeferred);
    for (size_t k = 0; k < plain.size(); ++k) {
      results[plain[k]] = applied.ok() ? std::move((*applied)[k]) : applied.status();
    }
  }
  // Each bucket's writes in request order as one entry, sent at once: the backups apply while
  // the primary orders the next bucket's and syncs.
  for (auto& [bucket, group] : replicated) {
    if (Status s = EnsureTerm(bucket); !s.ok()) {
      for (size_t i : group.slots) results[i] = s;
      continue;
    }
    StatusOr<storage::BucketStore::StampedWrite> stamped =
        store_->ApplyEachStamped(bucket, subset(group.slots), storage::WalSync::kDeferred);
    if (!stamped.ok()) {
      for (size_t i : group.slots) results[i] = stamped.status();
      continue;
    }
    for (size_t k = 0; k < group.slots.size(); ++k) {
      results[group.slots[k]] = std::move(stamped->results[k]);
    }
    if (stamped->entries.empty()) continue;
    group.rseq = stamped->entries.front().position.rseq;
    replication_.Ordered(bucket, group.rseq);
    Send(std::move(stamped->entries.front()));
  }
  if (Status synced = SyncReplicatedWrites(); !synced.ok()) {
    const Status unknown = SyncFailed(synced);
    for (StatusOr<storage::MutationResult>& result : results) {
      if (result.ok()) result = unknown;
    }
    return results;
  }
  for (const auto& [bucket, group] : replicated) {
    if (group.rseq != 0) replication_.LocalSynced(bucket, group.rseq);
  }
  const transport::Micros start = runtime_.Now();
  for (const auto& [bucket, group] : replicated) {
    // The slots whose answer reveals what the store holds: a refusal (a duplicate, a failed
    // condition), or every slot of a bucket that wrote nothing (a delete of a missing key).
    std::vector<size_t> revealing;
    for (size_t i : group.slots) {
      if (group.rseq == 0 || !results[i].ok()) revealing.push_back(i);
    }
    if (group.rseq != 0) {
      StatusOr<WriteState> state = AwaitDecided(bucket, group.rseq, start);
      if (!state.ok()) {
        // The process was stopped: the caller answers nothing.
        for (size_t i : group.slots) results[i] = state.status();
        continue;
      }
      Status outcome = OutcomeOf(bucket, group.rseq, *state);
      // A committed entry covers everything its slots read: it was ordered after every write
      // they saw.
      if (outcome.ok()) continue;
      for (size_t i : group.slots) {
        if (results[i].ok()) results[i] = outcome;
      }
    }
    // What a revealing slot read may rest on writes not on every replica yet: it waits for
    // them as a read does (ReplicatedWrite).
    for (size_t i : revealing) {
      const storage::Mutation& m = mutations[i];
      Status readable = AwaitReadable(
          bucket, /*replicated=*/true,
          storage::DocumentKey{.collection = m.collection, .primary_key = m.primary_key});
      if (!readable.ok()) results[i] = readable;
    }
  }
  return results;
}

}  // namespace shoal::node
