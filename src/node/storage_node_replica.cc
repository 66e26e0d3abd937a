// StorageNode: replication of a bucket's writes from its primary to its backups
// (storage_node.h, REPLICATION; docs/design/replication.md §3).
//
// At the primary: ReplicatedWrite orders a write in the store (ApplyEachStamped, deferred
// sync), hands the entry to Send, which releases entries to the backups' streams in rseq order
// and sends at once on every idle stream (an asynchronous call, so the backups apply while the
// primary syncs its own WAL), then waits for the ReplicationLog to commit or abandon the write.
// Each stream has one message in flight; its answer feeds the backup's acknowledged position
// back to the log and sends what queued meanwhile. One keeper task per backup sends keepalives,
// resends a message that failed and reports a silent backup.
//
// At a backup: HandleReplicate applies the entries of each bucket whose primary and term match
// its own map (BucketStore::ApplyReplicated), syncs once, and answers each bucket's position.
//
// Every message names the term of each bucket it carries or keeps alive; a backup's answer
// renews the primary's read lease for the buckets it accepted (§5). A new primary first sends
// its latest entries (RecentEntries), so that backups behind it reach its history (§4.2 step 6).
// Failure handling (fences, seals, reports) is in storage_node_failover.cc.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "src/common/log.h"
#include "src/node/storage_node.h"
#include "src/node/write_mutation.h"
#include "src/storage/errors.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Address;
using transport::Response;

namespace {

std::string NodeNames(const std::vector<NodeId>& nodes) {
  std::string out;
  for (NodeId node : nodes) out += (out.empty() ? "" : ",") + node.DebugString();
  return out;
}

}  // namespace

Status StorageNode::SyncReplicatedWrites() {
  if (store_->options().sync != storage::SyncPolicy::kEveryWrite) return OkStatus();
  return store_->SyncWal();
}

bool StorageNode::ReplicatedPrimaryLocked(const BucketPlacement& bucket) const {
  // A move that keeps the primary (a copy added or a backup replaced) or hands it to a backup
  // leaves the stable replicas streaming: `replicas` is the source until the commit and the
  // destination from it on.
  return map_ != nullptr && map_->replication_factor() > 1 &&
         (!bucket.transition.has_value() || bucket.transition->PrimaryStaysInSync()) &&
         !bucket.replicas.empty() && bucket.replicas.front() == options_.id;
}

void StorageNode::ConfigureReplicationLocked() {
  const NodeId self = options_.id;
  std::vector<NodeId> senders;
  absl::MutexLock outbox_lock(&outbox_mu_);
  // Replicated from here: this node's map makes it the primary, at a term neither fenced by a
  // restart nor sealed by a failover.
  auto replicated = [&](const BucketPlacement& bucket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ReplicatedPrimaryLocked(bucket) && !TermClosedLocked(bucket);
  };
  // Buckets no longer replicated from here, or under a new term: their uncommitted writes are
  // abandoned.
  for (auto it = outboxes_.begin(); it != outboxes_.end();) {
    const BucketPlacement* placement = map_->Find(it->first);
    if (placement != nullptr && replicated(*placement) && placement->term == it->second.term) {
      ++it;
      continue;
    }
    for (NodeId backup : it->second.backups) {
      if (auto stream = streams_.find(backup); stream != streams_.end()) {
        stream->second->DropBucket(it->first);
      }
    }
    replication_.Abandon(it->first);
    replication_.Forget(it->first);
    outboxes_.erase(it++);
  }
  for (const BucketPlacement& bucket : map_->buckets()) {
    if (!replicated(bucket)) continue;
    const std::vector<NodeId> backups(bucket.replicas.begin() + 1, bucket.replicas.end());
    const uint64_t held = store_->GetReplicaState(bucket.id).position.rseq;
    auto [it, added] = outboxes_.try_emplace(bucket.id);
    Outbox& outbox = it->second;
    if (added) {
      outbox.term = bucket.term;
      outbox.next = held + 1;
    }
    for (NodeId old : outbox.backups) {
      if (std::find(backups.begin(), backups.end(), old) != backups.end()) continue;
      if (auto stream = streams_.find(old); stream != streams_.end()) {
        stream->second->DropBucket(bucket.id);
      }
    }
    const std::vector<NodeId> before = added ? std::vector<NodeId>{} : outbox.backups;
    outbox.backups = backups;
    outbox.queues.clear();
    for (NodeId backup : backups) {
      std::shared_ptr<ReplicaStreamQueue>& stream = streams_[backup];
      if (stream == nullptr) {
        stream = std::make_shared<ReplicaStreamQueue>();
        senders.push_back(backup);
      }
      outbox.queues.push_back(stream);
      // A backup new to the bucket first gets this node's latest entries: it skips what it
      // holds and applies what it lacks of this node's history (a failover's winner is ahead of
      // the other backups by at most what RecentEntries keeps).
      if (std::find(before.begin(), before.end(), backup) == before.end()) {
        for (storage::ReplicatedEntry& entry : recent_.After(bucket.id, 0)) {
          if (entry.position.rseq <= held) stream->Push(std::move(entry));
        }
      }
    }
    // What each backup holds is learnt from its first answer (a keepalive is due at once).
    replication_.Configure(bucket.id, backups, held, /*joined_rseq=*/0);
  }
  // A backup the map dropped no longer holds writes back.
  for (auto it = floor_blocked_.begin(); it != floor_blocked_.end();) {
    const BucketPlacement* placement = map_->Find(it->first);
    if (placement != nullptr && placement->HasReplica(it->second) && replicated(*placement)) {
      ++it;
      continue;
    }
    replication_.Excuse(it->first, std::nullopt);
    floor_blocked_.erase(it++);
    --floor_blocked_count_;
  }
  for (NodeId backup : senders) {
    runtime_.Spawn(Address::Node(self),
                   fmt::format("n{}.replicate-to-n{}", self.value(), backup.value()),
                   [node = shared_from_this(), backup, queue = streams_[backup]] {
                     node->ReplicaKeeperLoop(backup, queue);
                   });
  }
}

Status StorageNode::EnsureTerm(BucketId bucket) {
  Term term(0);
  {
    absl::MutexLock lock(&mu_);
    const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(bucket);
    if (placement == nullptr) return InternalError("a replicated bucket without a placement");
    term = placement->term;
  }
  if (store_->GetReplicaState(bucket).current_term() >= term) return OkStatus();
  Status begun = store_->BeginTerm(bucket, term);
  // Another writer began it meanwhile.
  if (!begun.ok() && store_->GetReplicaState(bucket).current_term() >= term) return OkStatus();
  return begun;
}

void StorageNode::Send(storage::ReplicatedEntry entry) {
  std::vector<std::pair<NodeId, std::shared_ptr<ReplicaStreamQueue>>> streams;
  {
    absl::MutexLock lock(&outbox_mu_);
    auto it = outboxes_.find(entry.bucket);
    if (it == outboxes_.end()) return;  // no longer the primary: the write is abandoned
    Outbox& outbox = it->second;
    if (entry.position.rseq < outbox.next) return;
    outbox.waiting.emplace(entry.position.rseq, std::move(entry));
    while (!outbox.waiting.empty() && outbox.waiting.begin()->first == outbox.next) {
      recent_.Add(outbox.waiting.begin()->second);
      for (const auto& queue : outbox.queues) queue->Push(outbox.waiting.begin()->second);
      outbox.waiting.erase(outbox.waiting.begin());
      ++outbox.next;
    }
    for (size_t i = 0; i < outbox.backups.size(); ++i) {
      streams.emplace_back(outbox.backups[i], outbox.queues[i]);
    }
  }
  // Each idle stream sends at once; a busy one sends what queued when its answer comes.
  for (const auto& [backup, queue] : streams) SendNext(backup, queue, /*keepalive=*/false);
}

void StorageNode::SendNext(NodeId backup, const std::shared_ptr<ReplicaStreamQueue>& queue,
                           bool keepalive) {
  std::vector<transport::BucketTerm> terms = TermsFor(backup);
  const transport::Micros now = runtime_.Now();
  std::optional<std::vector<storage::ReplicatedEntry>> batch =
      queue->Take(now, keepalive && !terms.empty());
  if (!batch.has_value()) return;
  // Entries of a bucket no longer replicated to this backup are not sent.
  std::erase_if(*batch, [&](const storage::ReplicatedEntry& e) {
    return std::none_of(terms.begin(), terms.end(),
                        [&](const transport::BucketTerm& t) { return t.bucket == e.bucket; });
  });
  if (terms.empty()) {
    queue->Delivered();
    return;
  }
  transport::ReplicateRequest message{
      .primary = options_.id, .epoch = epoch(), .entries = std::move(*batch), .terms = terms};
  runtime_.CallAsync(Address::Node(backup), std::move(message), options_.call_timeout,
                     [node = shared_from_this(), backup, queue, terms = std::move(terms),
                      now](StatusOr<Response> response) {
                       node->HandleReplicateAnswer(backup, queue, terms, now, std::move(response));
                     });
}

Response StorageNode::ReplicatedWrite(const transport::WriteRequest& request, BucketId bucket) {
  if (Status s = EnsureTerm(bucket); !s.ok()) {
    Release(bucket, /*write=*/true);
    return Response::Error(s);
  }
  const storage::Mutation mutation = MutationOf(request);
  StatusOr<storage::BucketStore::StampedWrite> stamped =
      store_->ApplyEachStamped(bucket, std::span(&mutation, 1), storage::WalSync::kDeferred);
  if (!stamped.ok()) {
    Release(bucket, /*write=*/true);
    return Response::Error(stamped.status());
  }
  if (!stamped->results[0].ok() || stamped->entries.empty()) {
    // Refused on what the store holds (a duplicate, a missing key, a failed condition), or
    // nothing to write (a delete of a missing key): the answer reveals the state, which may
    // rest on writes not yet on every replica, so it waits for them as a read does.
    Status readable = AwaitReadable(
        bucket, /*replicated=*/true,
        storage::DocumentKey{.collection = request.collection, .primary_key = request.primary_key});
    Release(bucket, /*write=*/true);
    if (!readable.ok()) return Response::Error(readable);
    if (!stamped->results[0].ok()) return Response::Error(stamped->results[0].status());
    return Response::Ok(transport::WriteResponse{.version = stamped->results[0]->version});
  }
  const uint64_t version = stamped->results[0]->version;
  const uint64_t rseq = stamped->entries.front().position.rseq;
  replication_.Ordered(bucket, rseq);
  Send(std::move(stamped->entries.front()));
  // The local sync runs while the backups apply.
  if (Status synced = SyncReplicatedWrites(); !synced.ok()) {
    Release(bucket, /*write=*/true);
    return Response::Error(SyncFailed(synced));
  }
  replication_.LocalSynced(bucket, rseq);
  StatusOr<WriteState> state = AwaitDecided(bucket, rseq, runtime_.Now());
  Release(bucket, /*write=*/true);
  if (!state.ok()) return Response::Error(state.status());
  if (Status outcome = OutcomeOf(bucket, rseq, *state); !outcome.ok()) {
    return Response::Error(outcome);
  }
  RecordWrite(request.collection, request.primary_key);
  return Response::Ok(transport::WriteResponse{.version = version});
}

Status StorageNode::SyncFailed(const Status& sync) {
  return MakeStatus(StatusCode::kUnknown,
                    fmt::format("outcome unknown: the WAL sync failed: {}", sync.ToString()));
}

StatusOr<WriteState> StorageNode::AwaitDecided(BucketId bucket, uint64_t rseq,
                                               transport::Micros start) {
  auto wakeup = std::make_shared<transport::Wakeup>();
  replication_.Watch(bucket, rseq, wakeup);
  WriteState state = replication_.StateOf(bucket, rseq);
  Status waited = OkStatus();
  while (state == WriteState::kPending) {
    const transport::Micros left = options_.call_timeout - (runtime_.Now() - start);
    if (left < 0) break;
    waited = runtime_.Await(*wakeup, options_.queue_poll, left);
    if (!waited.ok()) break;
    state = replication_.StateOf(bucket, rseq);
  }
  replication_.Unwatch(bucket, wakeup.get());
  if (!waited.ok()) return waited;
  return state;
}

Status StorageNode::OutcomeOf(BucketId bucket, uint64_t rseq, WriteState state) const {
  switch (state) {
    case WriteState::kCommitted:
      return OkStatus();
    case WriteState::kPending:
      // kUnknown, as for every write whose outcome the client cannot know (shoal.h): the
      // write may still commit, or be lost in a failover.
      return MakeStatus(
          StatusCode::kUnknown,
          fmt::format("outcome unknown: n{} applied the write, but its backups [{}] did not "
                      "acknowledge it in time",
                      options_.id.value(), NodeNames(replication_.Lagging(bucket, rseq))));
    case WriteState::kAbandoned:
      return MakeStatus(
          StatusCode::kUnknown,
          fmt::format("outcome unknown: n{} stopped being the primary of {} before the write "
                      "reached every replica",
                      options_.id.value(), bucket.DebugString()));
  }
  return InternalError("unknown write state");
}

Status StorageNode::AwaitReadable(BucketId bucket, bool replicated,
                                  std::optional<storage::DocumentKey> key) {
  if (!replicated) return OkStatus();
  // Taken after the read: every write the read could see is at or below it.
  const uint64_t held = store_->GetReplicaState(bucket).position.rseq;
  const transport::Micros start = runtime_.Now();
  while (true) {
    // The lease is checked after the read was taken: while it holds, no other primary of the
    // bucket can have acknowledged a write (a failover waits it out), so the read is the latest.
    const bool leased = LeaseHeld(bucket);
    const uint64_t watermark = replication_.Watermark(bucket);
    if (leased && watermark >= held) return OkStatus();
    // Writes of other keys may still wait for a backup: none of the pending ones writes the key
    // (every entry past the watermark must still be kept to tell).
    if (leased && key.has_value() &&
        recent_.NoneWrites(bucket, watermark, held, key->collection, key->primary_key)) {
      return OkStatus();
    }
    if (!replication_.Tracks(bucket) || runtime_.Now() - start > options_.call_timeout) {
      return transport::MakeClusterError(
          transport::ClusterError::kNotServing,
          fmt::format("n{}: {} of {}; retry", options_.id.value(),
                      leased ? "the writes this read would return are not on every replica yet"
                             : "no read lease from the backups",
                      bucket.DebugString()));
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.queue_poll));
  }
}

bool StorageNode::LeaseHeld(BucketId bucket) const {
  const int64_t answered = heartbeat_answered_.load();
  const std::optional<int64_t> lease = replication_.LeaseFrom(
      bucket, answered == INT64_MIN ? std::nullopt : std::optional<int64_t>(answered));
  return lease.has_value() &&
         (*lease == INT64_MAX ||
          runtime_.Now() < *lease + options_.read_lease - options_.clock_drift);
}

Status StorageNode::CheckBackupRead(BucketId bucket, CollectionId collection, std::string_view pk) {
  transport::Micros heard = 0;
  uint64_t committed = 0;
  {
    absl::MutexLock lock(&mu_);
    const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(bucket);
    // An unreplicated bucket's only copy, or a primary's: nothing to check.
    if (placement == nullptr || map_->replication_factor() <= 1 || placement->replicas.empty() ||
        placement->replicas.front() == options_.id) {
      return OkStatus();
    }
    if (auto it = last_ack_.find(bucket); it != last_ack_.end()) heard = it->second;
    if (auto it = committed_.find(bucket);
        it != committed_.end() && it->second.term == placement->term) {
      committed = it->second.rseq;
    }
  }
  const auto refuse = [&](std::string why) {
    return transport::MakeClusterError(transport::ClusterError::kNotServing,
                                       fmt::format("n{}: {} of {}; read the primary",
                                                   options_.id.value(), why, bucket.DebugString()));
  };
  if (runtime_.Now() - heard > options_.max_staleness) {
    return refuse(
        fmt::format("no word from the primary for over {} ms", options_.max_staleness / 1000));
  }
  // Every write this copy holds of the key must be committed (on every replica): a write held
  // here alone could still be lost by a failover.
  const uint64_t held = store_->GetReplicaState(bucket).position.rseq;
  if (!recent_.NoneWrites(bucket, committed, held, collection, pk)) {
    return refuse("a write of the key not yet committed");
  }
  return OkStatus();
}

std::vector<transport::BucketTerm> StorageNode::TermsFor(NodeId backup) {
  std::vector<transport::BucketTerm> terms;
  absl::MutexLock lock(&outbox_mu_);
  for (const auto& [bucket, outbox] : outboxes_) {
    if (std::find(outbox.backups.begin(), outbox.backups.end(), backup) != outbox.backups.end()) {
      terms.push_back(
          {.bucket = bucket, .term = outbox.term, .committed = replication_.Watermark(bucket)});
    }
  }
  std::sort(terms.begin(), terms.end(),
            [](const auto& a, const auto& b) { return a.bucket < b.bucket; });
  return terms;
}

void StorageNode::HandleReplicateAnswer(NodeId backup,
                                        const std::shared_ptr<ReplicaStreamQueue>& queue,
                                        const std::vector<transport::BucketTerm>& terms,
                                        transport::Micros sent_at, StatusOr<Response> response) {
  std::optional<transport::ReplicateResponse> body;
  if (response.ok() && !response->status.ok()) {
    // Alive but taking nothing (a full disk, a store being rebuilt): the silence report says so.
    queue->Refused(response->status);
  } else if (response.ok()) {
    auto parsed = transport::BodyAs<transport::ReplicateResponse>(std::move(*response));
    if (parsed.ok()) body = std::move(*parsed);
  }
  if (!body.has_value()) {
    queue->Failed();  // the keeper sends it again
    return;
  }
  queue->Answered(runtime_.Now());
  std::vector<BucketId> stale;
  std::vector<std::pair<BucketId, uint64_t>> positions;  // the backup's, per accepted bucket
  for (const transport::ReplicaAck& ack : body->acks) {
    if (ack.status.ok()) {
      replication_.Acked(ack.bucket, backup, ack.position.rseq);
      replication_.Renewed(ack.bucket, backup, sent_at);
      UnblockAtFloor(ack.bucket, backup);
      positions.emplace_back(ack.bucket, ack.position.rseq);
      continue;
    }
    queue->DropBucket(ack.bucket);
    if (transport::ClusterErrorOf(ack.status) == transport::ClusterError::kStaleTerm) {
      stale.push_back(ack.bucket);
      continue;
    }
    // A gap this node cannot fill or a divergent copy: the backup needs a rebuild (§4.3). The
    // bucket's writes stay pending until the map removes it.
    for (const transport::BucketTerm& t : terms) {
      if (t.bucket == ack.bucket) {
        ReportBackup(t.bucket, t.term, backup, ack.status.ToString(), /*broken=*/true);
      }
    }
  }
  queue->Delivered();
  // A backup behind what this node released to the streams, with nothing queued or in flight
  // for it, will not get the rest by itself (its stream dropped entries, or it joined behind a
  // new primary): it gets them again from RecentEntries, or is reported broken when they are
  // no longer kept (§3 step 6). Under outbox_mu_, so that no new write is pushed between the
  // check and the refill (it would reach the backup before the older entries: a gap).
  std::vector<std::pair<transport::BucketTerm, std::string>> broken;
  {
    absl::MutexLock lock(&outbox_mu_);
    for (const auto& [bucket, held] : positions) {
      if (queue->queued() != 0 || queue->in_flight()) break;
      auto it = outboxes_.find(bucket);
      if (it == outboxes_.end()) continue;
      const uint64_t released = it->second.next - 1;
      if (held >= released) continue;
      std::vector<storage::ReplicatedEntry> missing = recent_.After(bucket, held);
      if (missing.empty() || missing.front().position.rseq != held + 1) {
        broken.emplace_back(
            transport::BucketTerm{.bucket = bucket, .term = it->second.term},
            fmt::format("at rseq {}, behind {} and the entries this node keeps", held, released));
        continue;
      }
      for (storage::ReplicatedEntry& entry : missing) {
        if (entry.position.rseq <= released) queue->Push(std::move(entry));
      }
    }
  }
  for (auto& [at, reason] : broken) {
    ReportBackup(at.bucket, at.term, backup, std::move(reason), /*broken=*/true);
  }
  if (!stale.empty()) {
    // The backup's map has a newer term or primary, or no longer lists it (it left the bucket
    // by a commit this node has not installed yet), or it is sealed. This node learns the newer
    // map first (on a task: this may run on a transport thread). A new term or primary there
    // abandons the pending writes as it is installed (ConfigureReplicationLocked), and a backup
    // that left no longer counts. Only a backup still listed at this node's own term (sealed by
    // a failover) leaves them to be abandoned here: they can no longer commit under this term,
    // which this node then closes (CloseTermSealedAtBackup). Abandoning them otherwise would
    // freeze the bucket's watermark for the rest of the term.
    std::vector<transport::BucketTerm> refused;
    for (BucketId bucket : stale) {
      for (const transport::BucketTerm& t : terms) {
        if (t.bucket == bucket) refused.push_back(t);
      }
    }
    runtime_.Spawn(Address::Node(options_.id), fmt::format("n{}.learn-term", options_.id.value()),
                   [node = shared_from_this(), backup, refused] {
                     ActiveGuard guard(node.get());
                     (void)node->RefreshMap();
                     for (const transport::BucketTerm& t : refused) {
                       if (node->StillStreamsTo(t, backup)) node->CloseTermSealedAtBackup(t);
                     }
                   });
  }
  if (queue->queued() > 0) SendNext(backup, queue, /*keepalive=*/false);
}

void StorageNode::CloseTermSealedAtBackup(const transport::BucketTerm& at) {
  replication_.Abandon(at.bucket);
  absl::MutexLock lock(&mu_);
  Term& sealed = sealed_[at.bucket];
  if (sealed >= at.term) return;
  sealed = at.term;
  log::Info("replica.term_closed", {{"node", options_.id.value()},
                                    {"bucket", at.bucket.value()},
                                    {"term", at.term.value()},
                                    {"reason", "a backup answered sealed"}});
}

bool StorageNode::StillStreamsTo(const transport::BucketTerm& at, NodeId backup) const {
  absl::MutexLock lock(&mu_);
  const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(at.bucket);
  return placement != nullptr && ReplicatedPrimaryLocked(*placement) &&
         placement->term == at.term && placement->HasReplica(backup);
}

void StorageNode::ReplicaKeeperLoop(NodeId backup, std::shared_ptr<ReplicaStreamQueue> queue) {
  ActiveGuard guard(this);
  const transport::Micros keepalive = std::max<transport::Micros>(options_.read_lease / 4, 1);
  const transport::Micros tick = std::max(options_.queue_poll, keepalive / 8);
  transport::Micros busy_since = runtime_.Now();  // silence counts while there is a bucket
  transport::Micros last_report = 0;
  bool busy = false;
  while (runtime_.Alive()) {
    const transport::Micros now = runtime_.Now();
    const std::vector<transport::BucketTerm> terms = TermsFor(backup);
    if (!busy && !terms.empty()) busy_since = now;
    busy = !terms.empty();
    // A backup silent for T_ack is reported for the buckets it is a backup of here; the
    // coordinator removes it (above min_in_sync), and the writes waiting for it commit.
    const transport::Micros silent = now - std::max(queue->last_answer(busy_since), busy_since);
    if (busy && silent >= options_.replica_ack_timeout &&
        now - last_report >= options_.replica_ack_timeout) {
      last_report = now;
      const std::optional<Status> refusal = queue->refusal();
      ReportSilentBackup(backup, refusal.has_value()
                                     ? fmt::format("refused every message for {} ms: {}",
                                                   silent / 1000, refusal->ToString())
                                     : fmt::format("no answer for {} ms", silent / 1000));
    }
    // A message that failed goes again, entries left queued go, and a keepalive when one is due.
    SendNext(backup, queue, /*keepalive=*/now - queue->last_sent() >= keepalive);
    if (!runtime_.Sleep(tick).ok()) return;
  }
}

Response StorageNode::HandleReplicate(const transport::ReplicateRequest& request) {
  if (request.epoch > epoch()) {
    (void)RefreshMap();
    // Judged on an older map it would refuse the entries for good (the primary drops refused
    // entries): have the message sent again instead.
    if (request.epoch > epoch()) {
      return Response::Error(transport::MakeClusterError(
          transport::ClusterError::kNotServing,
          fmt::format("n{} has not got the primary's map {} yet", options_.id.value(),
                      request.epoch.DebugString())));
    }
  }
  const NodeId self = options_.id;
  std::map<BucketId, Term> terms;
  std::map<BucketId, uint64_t> committed;  // the primary's watermark, per bucket
  for (const transport::BucketTerm& t : request.terms) {
    terms.emplace(t.bucket, t.term);
    committed.emplace(t.bucket, t.committed);
  }
  // Which buckets' entries this node takes: its map names the sender their primary at the term
  // the message names, this node one of their backups, and no seal closed that term here.
  std::map<BucketId, Status> refused;
  std::vector<BucketId> buckets;
  for (const auto& [bucket, term] : terms) buckets.push_back(bucket);
  for (const storage::ReplicatedEntry& entry : request.entries) {
    if (!terms.contains(entry.bucket)) {
      refused.emplace(entry.bucket,
                      InvalidArgumentError(fmt::format("entries of {} without its term",
                                                       entry.bucket.DebugString())));
      buckets.push_back(entry.bucket);
    }
  }
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [bucket, term] : terms) {
      const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(bucket);
      const bool member =
          placement != nullptr &&
          (!placement->transition.has_value() || placement->transition->PrimaryStaysInSync()) &&
          placement->replicas.size() > 1 && placement->replicas.front() == request.primary &&
          placement->HasReplica(self) && self != request.primary;
      auto sealed = sealed_.find(bucket);
      const bool open = sealed == sealed_.end() || sealed->second < term;
      if (StoreReplacedLocked()) {
        refused.emplace(
            bucket, FailedPreconditionError(fmt::format(
                        "n{}: its store is not the one the map lists; rebuild it", self.value())));
        continue;
      }
      if (!member || term != placement->term || !open) {
        refused.emplace(bucket,
                        transport::MakeClusterError(
                            transport::ClusterError::kStaleTerm,
                            fmt::format("n{} at {} does not take {}'s writes to {} at {}{}",
                                        self.value(), map_ ? map_->epoch().DebugString() : "e0",
                                        NodeId(request.primary).DebugString(), bucket.DebugString(),
                                        term.DebugString(), open ? "" : " (sealed)")));
      }
    }
  }
  std::vector<storage::ReplicatedEntry> accepted;
  for (const storage::ReplicatedEntry& entry : request.entries) {
    if (refused.contains(entry.bucket)) continue;
    if (entry.position.term > terms.at(entry.bucket)) {
      refused.emplace(entry.bucket, InvalidArgumentError(fmt::format(
                                        "entry {} of {} is of a term after the message's {}",
                                        entry.position.DebugString(), entry.bucket.DebugString(),
                                        terms.at(entry.bucket).DebugString())));
      continue;
    }
    accepted.push_back(entry);
  }
  std::erase_if(accepted,
                [&](const storage::ReplicatedEntry& e) { return refused.contains(e.bucket); });
  std::map<BucketId, Status> failed = refused;
  if (!accepted.empty()) {
    auto applied = store_->ApplyReplicated(accepted, storage::WalSync::kDeferred);
    if (!applied.ok()) return Response::Error(applied.status());
    for (size_t i = 0; i < accepted.size(); ++i) {
      const StatusOr<storage::ReplicaPosition>& result = (*applied)[i];
      if (!result.ok()) {
        failed.emplace(accepted[i].bucket, result.status());
      } else if (!failed.contains(accepted[i].bucket)) {
        recent_.Add(accepted[i]);
      }
    }
    // One sync for the whole message, before any position is reported.
    if (Status synced = SyncReplicatedWrites(); !synced.ok()) return Response::Error(synced);
  }
  transport::ReplicateResponse out;
  const transport::Micros now = runtime_.Now();
  absl::MutexLock lock(&mu_);
  for (BucketId bucket : buckets) {
    transport::ReplicaAck ack{.bucket = bucket, .status = OkStatus(), .position = {}};
    if (auto it = failed.find(bucket); it != failed.end()) {
      ack.status = it->second;
    } else {
      last_ack_[bucket] = now;
      Committed& known = committed_[bucket];
      const Term term = terms.at(bucket);
      if (known.term != term) known = Committed{.term = term, .rseq = 0};
      known.rseq = std::max(known.rseq, committed.at(bucket));
    }
    ack.position = store_->GetReplicaState(bucket).position;
    out.acks.push_back(std::move(ack));
  }
  return Response::Ok(std::move(out));
}

}  // namespace shoal::node
