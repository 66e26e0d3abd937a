#include "src/node/storage_node.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/container/flat_hash_set.h"
#include "src/common/log.h"
#include "src/common/overloaded.h"
#include "src/common/point.h"
#include "src/node/node_ranges.h"
#include "src/storage/errors.h"

namespace shoal::node {

using cluster::BucketPlacement;
using cluster::TransitionStage;
using transport::Address;
using transport::Response;

std::string_view ToString(LocalRole role) {
  switch (role) {
    case LocalRole::kNotAssigned:
      return "NotAssigned";
    case LocalRole::kAdding:
      return "Adding";
    case LocalRole::kReadWrite:
      return "ReadWrite";
    case LocalRole::kLeaving:
      return "Leaving";
  }
  return "?";
}

StorageNode::StorageNode(transport::Runtime& runtime, const NodeOptions& options)
    : runtime_(runtime),
      options_(options),
      read_rates_(runtime.Now()),
      write_rates_(runtime.Now()),
      // Only told apart by the coordinator's logs: the wall clock makes each start distinct.
      incarnation_(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count())),
      hot_keys_(options.hot_keys) {}

StorageNode::~StorageNode() {
  if (store_ != nullptr) (void)store_->Close();
}

StatusOr<std::shared_ptr<StorageNode>> StorageNode::Open(transport::Runtime& runtime,
                                                         const NodeOptions& options) {
  std::shared_ptr<StorageNode> node(new StorageNode(runtime, options));
  storage::StoreOptions store_options = options.store;
  store_options.path = options.data_dir + "/store";
  store_options.check_ownership = false;  // ownership is the map's, decided here
  if (options.move_chunk_bytes == 0 ||
      options.move_chunk_bytes > transport::kMaxMoveFileChunkBytes) {
    return InvalidArgumentError(fmt::format("move_chunk_bytes {} outside [1, {}]",
                                            options.move_chunk_bytes,
                                            transport::kMaxMoveFileChunkBytes));
  }
  if (options.move_chunk_attempts < 1) {
    return InvalidArgumentError("move_chunk_attempts must be at least 1");
  }
  if (options.background_nice < 0 || options.background_nice > kMaxBackgroundNice) {
    return InvalidArgumentError(fmt::format("background_nice {} outside [0, {}]",
                                            options.background_nice, kMaxBackgroundNice));
  }
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir + "/moves", ec);
  if (ec) return IoError(fmt::format("create {}/moves: {}", options.data_dir, ec.message()));
  // A fetch cut short by a crash is never ingested: its copies go.
  SHOAL_RETURN_IF_ERROR(RemoveStagingDirectories(options.data_dir));
  SHOAL_ASSIGN_OR_RETURN(ClusterIdentity cluster, ClusterIdentity::Open(options.data_dir));
  SHOAL_ASSIGN_OR_RETURN(node->store_, storage::BucketStore::Open(store_options));
  {
    absl::MutexLock lock(&node->mu_);
    node->cluster_ = std::move(cluster);
    for (const auto& spec : node->store_->ListCollections()) node->collections_[spec.id] = true;
    // Seals outlive a restart (replication.md §4.8): a failover may still be waiting out the
    // lease of the primary this node refused.
    for (const auto& [bucket, term] : node->store_->Seals()) node->sealed_[bucket] = term;
  }
  return node;
}

void StorageNode::Start() {
  runtime_.Serve(Address::Node(options_.id), shared_from_this());
  runtime_.Spawn(Address::Node(options_.id), fmt::format("n{}.heartbeat", options_.id.value()),
                 [self = shared_from_this()] { self->HeartbeatLoop(); });
}

Status StorageNode::Close() {
  runtime_.Stop(Address::Node(options_.id));
  while (active() > 0) {
    if (!runtime_.Sleep(1000).ok()) break;
  }
  if (store_ == nullptr) return OkStatus();
  return store_->Close();
}

uint64_t StorageNode::ClusterId() const {
  absl::MutexLock lock(&mu_);
  return cluster_->id();
}

MapEpoch StorageNode::epoch() const {
  absl::MutexLock lock(&mu_);
  return map_ == nullptr ? MapEpoch(0) : map_->epoch();
}

int StorageNode::active() const {
  absl::MutexLock lock(&mu_);
  return active_;
}

NodeCounters StorageNode::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

LocalRole StorageNode::RoleLocked(const BucketPlacement& bucket) const {
  const NodeId self = options_.id;
  if (!bucket.transition.has_value()) {
    return Contains(bucket.replicas, self) ? LocalRole::kReadWrite : LocalRole::kNotAssigned;
  }
  const auto& t = *bucket.transition;
  const bool source = Contains(t.source, self);
  const bool destination = Contains(t.destination, self);
  if (cluster::IsCommitted(t.stage)) {
    if (destination) return LocalRole::kReadWrite;
    return source ? LocalRole::kLeaving : LocalRole::kNotAssigned;
  }
  if (source) return LocalRole::kLeaving;
  return destination ? LocalRole::kAdding : LocalRole::kNotAssigned;
}

LocalRole StorageNode::RoleOf(BucketId bucket) const {
  absl::MutexLock lock(&mu_);
  if (map_ == nullptr) return LocalRole::kNotAssigned;
  const BucketPlacement* placement = map_->Find(bucket);
  return placement == nullptr ? LocalRole::kNotAssigned : RoleLocked(*placement);
}

StorageNode::Admission StorageNode::AdmitLocked(const BucketPlacement& bucket,
                                                std::optional<MoveId> via_move,
                                                Access access) const {
  std::optional<cluster::LocalMoveState> local;
  if (auto it = moves_.find(bucket.id); it != moves_.end()) {
    local = cluster::LocalMoveState{
        .move = it->second.move, .fenced = it->second.fenced, .sealed = it->second.sealed};
  }
  return cluster::Admit(bucket, options_.id, local, access, via_move);
}

bool StorageNode::CanAcknowledgeWrite(Point point) const {
  absl::MutexLock lock(&mu_);
  if (map_ == nullptr) return false;
  StatusOr<Admitted> admitted = DecideLocked(map_->Lookup(point), std::nullopt, Access::kWrite);
  return admitted.ok() && cluster::Admits(admitted->admission) &&
         (!admitted->replicated || LeaseHeld(admitted->bucket));
}

StatusOr<StorageNode::Admitted> StorageNode::DecideLocked(const BucketPlacement& bucket,
                                                          std::optional<MoveId> via_move,
                                                          Access access) const {
  Admitted admitted{.admission = AdmitLocked(bucket, via_move, access),
                    .bucket = bucket.id,
                    .move = {},
                    .source = {},
                    .replicated = false};
  switch (admitted.admission) {
    case Admission::kServe:
      SHOAL_RETURN_IF_ERROR(GateReplicatedLocked(bucket, access, &admitted));
      break;
    case Admission::kServeViaSource:
      admitted.move = bucket.transition->move;
      admitted.source = bucket.transition->source.front();
      break;
    case Admission::kQueue:
    case Admission::kWrongShard:
    case Admission::kNotYet:
      break;
  }
  return admitted;
}

Status StorageNode::RefreshMap() {
  SHOAL_ASSIGN_OR_RETURN(
      auto response,
      runtime_.Call(Address::Coordinator(), transport::GetMapRequest{}, options_.call_timeout));
  SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::GetMapResponse>(response));
  absl::MutexLock lock(&mu_);
  InstallLocked(body.state);
  return OkStatus();
}

void StorageNode::InstallLocked(const transport::ClusterState& state) {
  // Nothing of another cluster: its collection ids name other collections than this store's.
  if (Status admitted = cluster_->Admit(state.cluster_id); !admitted.ok()) {
    if (!other_cluster_logged_) {
      other_cluster_logged_ = true;
      log::Error("node.other_cluster",
                 {{"node", options_.id.value()}, {"error", admitted.ToString()}});
    }
    return;
  }
  // Register new collections (idempotent, local, no yield), whatever the epoch.
  for (const auto& spec : state.collections) {
    if (collections_.count(spec.id) != 0) continue;
    if (store_->CreateCollection(spec).ok()) collections_[spec.id] = true;
  }
  if (state.map == nullptr) return;
  if (map_ != nullptr && state.map->epoch() <= map_->epoch()) return;
  const cluster::ShardMapPtr before = map_;
  map_ = state.map;
  if (before != nullptr && map_->replication_factor() > 1) StartNewBucketsLocked(*before);
  if (before != nullptr) ForgetRetainedLogsLocked(*before);
  ForgetMootSealsLocked();
  if (!installed_) {
    installed_ = true;
    FenceRestartedTermsLocked();
  }
  // Forget move records whose move is no longer in flight.
  for (auto it = moves_.begin(); it != moves_.end();) {
    const BucketPlacement* bucket = map_->Find(it->first);
    const bool live = bucket != nullptr && bucket->transition.has_value() &&
                      bucket->transition->move == it->second.move;
    if (live) {
      ++it;
    } else {
      moves_.erase(it++);
    }
  }
  // The exports of moves no longer in flight are served no more.
  const cluster::ShardMap* map = map_.get();
  exports_.Retain([map](BucketId bucket, MoveId move) {
    const BucketPlacement* placement = map->Find(bucket);
    return placement != nullptr && placement->transition.has_value() &&
           placement->transition->move == move;
  });
  EndQuiescesLocked();
  ConfigureReplicationLocked();
}

StatusOr<StorageNode::Admitted> StorageNode::AwaitAdmission(MapEpoch client_epoch, Point point,
                                                            std::optional<MoveId> via_move,
                                                            Access access) {
  const transport::Micros start = runtime_.Now();
  bool counted_queue = false;
  // A caller ahead of us has seen an edit we have not: decide with it.
  if (client_epoch > epoch()) (void)RefreshMap();
  while (true) {
    Admission admission = Admission::kNotYet;
    {
      absl::MutexLock lock(&mu_);
      if (map_ != nullptr) {
        const BucketPlacement& bucket = map_->Lookup(point);
        SHOAL_ASSIGN_OR_RETURN(Admitted admitted, DecideLocked(bucket, via_move, access));
        admission = admitted.admission;
        if (admission == Admission::kServe || admission == Admission::kServeViaSource) {
          ++inflight_writes_[bucket.id];
          return admitted;
        }
        if (admission == Admission::kWrongShard) {
          ++counters_.wrong_shard;
          return admitted;
        }
        if (admission == Admission::kQueue && !counted_queue) {
          ++counters_.queued;
          counted_queue = true;
        }
      }
    }
    if (admission == Admission::kNotYet || client_epoch > epoch()) (void)RefreshMap();
    if (runtime_.Now() - start > options_.fence_timeout) {
      absl::MutexLock lock(&mu_);
      ++counters_.fence_timeouts;
      return Admitted{.admission = Admission::kNotYet,
                      .bucket = {},
                      .move = {},
                      .source = {},
                      .replicated = false};
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.queue_poll));
  }
}

void StorageNode::Release(BucketId bucket, bool write) {
  absl::MutexLock lock(&mu_);
  --inflight_writes_[bucket];
  if (write) {
    ++counters_.writes;
    write_rates_.Record(bucket);
  } else {
    ++counters_.reads;
    read_rates_.Record(bucket);
  }
}

StatusOr<StorageNode::Admission> StorageNode::ScanBucketLocked(
    MapEpoch client_epoch, BucketId bucket, const storage::PointRange& range) const {
  const BucketPlacement* named = map_->Find(bucket);
  if (named != nullptr && ToPointRange(named->range).Covers(range)) return Admission::kServe;
  if (client_epoch < map_->epoch()) return Admission::kWrongShard;
  if (client_epoch > map_->epoch()) return Admission::kNotYet;
  return InvalidArgumentError(
      named == nullptr
          ? fmt::format("scan of {} names {}, which {} does not have", range.DebugString(),
                        bucket.DebugString(), map_->epoch().DebugString())
          : fmt::format("scan of {} names {}, which holds {} at {}", range.DebugString(),
                        bucket.DebugString(), named->range.DebugString(),
                        map_->epoch().DebugString()));
}

StatusOr<StorageNode::Admitted> StorageNode::AwaitScanAdmission(MapEpoch client_epoch,
                                                                BucketId bucket,
                                                                const storage::PointRange& range,
                                                                std::optional<MoveId> via_move) {
  const transport::Micros start = runtime_.Now();
  if (client_epoch > epoch()) (void)RefreshMap();
  while (true) {
    Admission admission = Admission::kNotYet;
    {
      absl::MutexLock lock(&mu_);
      if (map_ != nullptr) {
        SHOAL_ASSIGN_OR_RETURN(admission, ScanBucketLocked(client_epoch, bucket, range));
        // The range lies in the named bucket: its admission is the scan's.
        Admitted admitted{.admission = admission,
                          .bucket = bucket,
                          .move = {},
                          .source = {},
                          .replicated = false};
        if (admission == Admission::kServe) {
          SHOAL_ASSIGN_OR_RETURN(admitted,
                                 DecideLocked(*map_->Find(bucket), via_move, Access::kRead));
          admission = admitted.admission;
        }
        switch (admission) {
          case Admission::kWrongShard:
            ++counters_.wrong_shard;
            return admitted;
          case Admission::kServeViaSource:
          case Admission::kServe:
            return admitted;
          case Admission::kQueue:
          case Admission::kNotYet:
            break;
        }
      }
    }
    if (admission == Admission::kNotYet || client_epoch > epoch()) (void)RefreshMap();
    if (runtime_.Now() - start > options_.fence_timeout) {
      return Admitted{.admission = Admission::kNotYet,
                      .bucket = {},
                      .move = {},
                      .source = {},
                      .replicated = false};
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.queue_poll));
  }
}

Response StorageNode::Refuse(Admission admission) {
  absl::MutexLock lock(&mu_);
  switch (admission) {
    case Admission::kWrongShard:
      return Response::Error(
          transport::MakeClusterError(
              transport::ClusterError::kWrongShard,
              fmt::format("n{} does not serve this key at {}", options_.id.value(),
                          map_ ? map_->epoch().DebugString() : "no map")),
          map_);
    case Admission::kQueue:
    case Admission::kNotYet:
      return Response::Error(transport::MakeClusterError(
          transport::ClusterError::kNotServing,
          fmt::format("n{} cannot serve this key yet; retry", options_.id.value())));
    case Admission::kServe:
    case Admission::kServeViaSource:
      break;
  }
  return Response::Error(InternalError("refusing an admitted request"));
}

Response StorageNode::Handle(const Address& from, const transport::Request& request) {
  ActiveGuard guard(this);
  (void)from;
  return std::visit(
      Overloaded{
          [&](const transport::WriteRequest& r) { return HandleWrite(r); },
          [&](const transport::BatchWriteRequest& r) { return HandleBatchWrite(r); },
          [&](const transport::GetRequest& r) { return HandleGet(r); },
          [&](const transport::BatchGetRequest& r) { return HandleBatchGet(r); },
          [&](const transport::ScanRequest& r) { return HandleScan(r); },
          [&](const transport::InstallMapRequest& r) { return HandleInstallMap(r); },
          [&](const transport::ExportBucketRequest& r) { return HandleExport(r); },
          [&](const transport::IngestBucketRequest& r) { return HandleIngest(r); },
          [&](const transport::CatchUpRequest& r) { return HandleCatchUp(r); },
          [&](const transport::ReadChangesRequest& r) { return HandleReadChanges(r); },
          [&](const transport::FenceRequest& r) { return HandleFence(r); },
          [&](const transport::DropBucketRequest& r) { return HandleDrop(r); },
          [&](const transport::BucketLoadRequest&) { return HandleLoad(); },
          [&](const transport::TransferBucketRequest& r) { return HandleTransfer(r); },
          [&](const transport::FetchMoveFileRequest& r) { return HandleFetchMoveFile(r); },
          [&](const transport::ReplicateRequest& r) { return HandleReplicate(r); },
          [&](const transport::SealTermRequest& r) { return HandleSealTerm(r); },
          [&](const transport::QuiesceRequest& r) { return HandleQuiesce(r); },
          [&](const transport::ResumeCopyRequest& r) { return HandleResumeCopy(r); },
          [&](const transport::RetainedLogRequest& r) { return HandleRetainedLog(r); },
          [&](const auto&) {
            return Response::Error(UnimplementedError("not a storage node request"));
          },
      },
      request);
}

Status StorageNode::EnsureCollection(CollectionId collection) {
  auto known = [&] {
    absl::MutexLock lock(&mu_);
    return collections_.count(collection) != 0;
  };
  if (known()) return OkStatus();
  SHOAL_RETURN_IF_ERROR(RefreshMap());
  if (known()) return OkStatus();
  return storage::StorageError(storage::ErrorReason::kUnknownCollection,
                               fmt::format("unknown collection {}", collection.DebugString()));
}

Response StorageNode::HandleWrite(const transport::WriteRequest& request,
                                  storage::WalSync wal_sync) {
  if (Status s = EnsureCollection(request.collection); !s.ok()) return Response::Error(s);
  const Point point = PointOf(request.collection, request.primary_key);
  auto admitted = AwaitAdmission(request.epoch, point, request.via_move, Access::kWrite);
  if (!admitted.ok()) return Response::Error(admitted.status());
  if (admitted->admission == Admission::kServeViaSource) {
    return ForwardWrite(request, *admitted, wal_sync);
  }
  if (admitted->admission != Admission::kServe) return Refuse(admitted->admission);
  const BucketId bucket = admitted->bucket;
  if (request.via_move.has_value()) {
    // A write the destination of a switch-then-copy move forwarded: tests delay it here.
    if (Status s = runtime_.Failpoint("source.before_forwarded_write"); !s.ok()) {
      Release(bucket, /*write=*/true);
      return Response::Error(s);
    }
  }

  if (admitted->replicated) return ReplicatedWrite(request, bucket);

  // The write runs outside mu_; Fence waits for the in-flight count to drop to zero, so it
  // reports a sequence that includes this write.
  StatusOr<uint64_t> version = InternalError("unset");
  const std::string_view pk = request.primary_key;
  const std::string_view body = request.body;
  switch (request.op) {
    case transport::WriteOp::kInsert:
      version = store_->Insert(request.collection, pk, body, wal_sync);
      break;
    case transport::WriteOp::kUpdate:
      version = store_->Update(request.collection, pk, body, wal_sync);
      break;
    case transport::WriteOp::kUpsert:
      version = store_->Upsert(request.collection, pk, body, wal_sync);
      break;
    case transport::WriteOp::kDelete:
      version = store_->Delete(request.collection, pk, wal_sync);
      break;
    case transport::WriteOp::kCompareAndSet:
      version =
          store_->CompareAndSet(request.collection, pk, request.expected_version, body, wal_sync);
      break;
  }
  Release(bucket, /*write=*/true);
  if (!version.ok()) return Response::Error(version.status());
  // A crash here loses the answer of a write that is applied (tests of the client's retries).
  if (Status s = runtime_.Failpoint("node.after_write"); !s.ok()) return Response::Error(s);
  // A write run for a switch-then-copy destination counts there, where it is acknowledged.
  if (!request.via_move.has_value()) RecordWrite(request.collection, request.primary_key);
  return Response::Ok(transport::WriteResponse{.version = *version});
}

Response StorageNode::HandleGet(const transport::GetRequest& request) {
  if (Status s = EnsureCollection(request.collection); !s.ok()) return Response::Error(s);
  const Point point = PointOf(request.collection, request.primary_key);
  auto admitted = AwaitAdmission(request.epoch, point, request.via_move,
                                 request.any_replica ? Access::kReadAnyReplica : Access::kRead);
  if (!admitted.ok()) return Response::Error(admitted.status());
  if (admitted->admission == Admission::kServeViaSource) return ForwardGet(request, *admitted);
  if (admitted->admission != Admission::kServe) return Refuse(admitted->admission);
  storage::GetOptions get;
  get.include_tombstones = request.via_move.has_value() && request.include_tombstones;
  StatusOr<storage::Document> document = store_->Get(request.collection, request.primary_key, get);
  // A backup's answer (after the read: the check covers every write the read could see).
  Status readable = request.any_replica && !admitted->replicated
                        ? CheckBackupRead(admitted->bucket, request.collection, request.primary_key)
                        : AwaitReadable(admitted->bucket, admitted->replicated,
                                        storage::DocumentKey{.collection = request.collection,
                                                             .primary_key = request.primary_key});
  Release(admitted->bucket, /*write=*/false);
  if (!readable.ok()) return Response::Error(readable);
  if (!document.ok()) return Response::Error(document.status());
  return Response::Ok(transport::GetResponse{.document = std::move(*document)});
}

Response StorageNode::HandleScan(const transport::ScanRequest& request) {
  if (Status valid = transport::ValidateScan(request); !valid.ok()) return Response::Error(valid);
  auto admitted =
      AwaitScanAdmission(request.epoch, request.bucket, request.range, request.via_move);
  if (!admitted.ok()) return Response::Error(admitted.status());
  if (admitted->admission == Admission::kServeViaSource) return ForwardScan(request, *admitted);
  if (admitted->admission != Admission::kServe) return Refuse(admitted->admission);
  storage::ScanOptions scan;
  scan.include_tombstones = request.via_move.has_value() && request.include_tombstones;
  scan.range = request.range;
  scan.collection = request.collection;
  scan.filter = request.filter;
  scan.cursor = request.cursor;
  scan.max_documents = std::min(request.max_documents, options_.max_scan_documents);
  scan.max_page_bytes = request.max_bytes;
  StatusOr<storage::ScanPage> page = store_->Scan(scan);
  {
    absl::MutexLock lock(&mu_);
    ++counters_.reads;
    read_rates_.Record(admitted->bucket);
  }
  if (Status readable = AwaitReadable(admitted->bucket, admitted->replicated); !readable.ok()) {
    return Response::Error(readable);
  }
  if (!page.ok()) return Response::Error(page.status());
  return Response::Ok(transport::ScanResponse{.documents = std::move(page->documents),
                                              .next_cursor = std::move(page->next_cursor)});
}

Response StorageNode::HandleInstallMap(const transport::InstallMapRequest& request) {
  absl::MutexLock lock(&mu_);
  InstallLocked(request.state);
  return Response::Ok();
}

void StorageNode::HeartbeatLoop() {
  ActiveGuard guard(this);
  constexpr transport::Micros kRefusedLogInterval = 30'000'000;
  transport::Micros refused_logged_at = INT64_MIN / 2;
  while (runtime_.Alive()) {
    transport::HeartbeatRequest heartbeat{.node = options_.id,
                                          .epoch = epoch(),
                                          .store_id = store_->store_id(),
                                          .incarnation = incarnation_,
                                          .fenced = FencedTerms(),
                                          .quiesced = LongQuiesces(),
                                          .cluster_id = ClusterId()};
    const transport::Micros sent_at = runtime_.Now();
    auto response = runtime_.Call(Address::Coordinator(), heartbeat, options_.call_timeout);
    if (response.ok() && response->status.code() == StatusCode::kFailedPrecondition) {
      // The coordinator does not take this node: another store speaks for its id
      // (Membership::AdmitStore) or its data directory belongs to another cluster
      // (ClusterIdentity). It gets no map and serves nothing meanwhile.
      if (sent_at - refused_logged_at >= kRefusedLogInterval) {
        refused_logged_at = sent_at;
        log::Error("node.refused",
                   {{"node", options_.id.value()}, {"error", response->status.ToString()}});
      }
    } else if (response.ok()) {
      auto body = transport::BodyAs<transport::HeartbeatResponse>(std::move(*response));
      if (body.ok()) {
        heartbeat_answered_.store(sent_at);
        LiftQuiesces(body->released);
        if (body->epoch > epoch()) (void)RefreshMap();
      }
    } else if (response.status().code() == StatusCode::kCancelled) {
      return;
    }
    if (!runtime_.Sleep(options_.heartbeat_interval).ok()) return;
  }
}

}  // namespace shoal::node
