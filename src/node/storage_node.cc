#include "src/node/storage_node.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "absl/container/flat_hash_set.h"
#include "src/common/point.h"
#include "src/node/node_ranges.h"
#include "src/storage/errors.h"

namespace shoal::node {

using cluster::BucketPlacement;
using cluster::TransitionStage;
using transport::Address;
using transport::Response;

namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

bool Contains(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

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

// Counts a running handler or task, so that Close waits for it.
class StorageNode::ActiveGuard {
 public:
  explicit ActiveGuard(StorageNode* node) : node_(node) {
    std::lock_guard<std::mutex> lock(node_->mu_);
    ++node_->active_;
  }
  ~ActiveGuard() {
    std::lock_guard<std::mutex> lock(node_->mu_);
    --node_->active_;
  }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;

 private:
  StorageNode* node_;
};

StorageNode::StorageNode(transport::Runtime& runtime, const NodeOptions& options)
    : runtime_(runtime), options_(options), hot_keys_(options.hot_keys) {}

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
  SHOAL_ASSIGN_OR_RETURN(node->store_, storage::BucketStore::Open(store_options));
  for (const auto& spec : node->store_->ListCollections()) node->collections_[spec.id] = true;
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

MapEpoch StorageNode::epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_ == nullptr ? MapEpoch(0) : map_->epoch();
}

int StorageNode::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

NodeCounters StorageNode::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
  if (map_ == nullptr) return LocalRole::kNotAssigned;
  const BucketPlacement* placement = map_->Find(bucket);
  return placement == nullptr ? LocalRole::kNotAssigned : RoleLocked(*placement);
}

StorageNode::Admission StorageNode::AdmitLocked(const BucketPlacement& bucket,
                                                std::optional<MoveId> via_move,
                                                Access access) const {
  const NodeId self = options_.id;
  if (!bucket.transition.has_value()) {
    if (via_move.has_value()) return Admission::kWrongShard;  // that move is over
    return Contains(bucket.replicas, self) ? Admission::kServe : Admission::kWrongShard;
  }
  const auto& t = *bucket.transition;
  const bool source = Contains(t.source, self);
  const bool destination = Contains(t.destination, self);
  const bool switched = t.mode == cluster::TransitionMode::kSwitchThenCopy &&
                        (t.stage == TransitionStage::kCopy || t.stage == TransitionStage::kCatchUp);
  if (via_move.has_value()) {
    // Only the source of that very move serves forwarded requests, and only once switched; in
    // kPrepare it is still fenced (our map may be behind the destination's). Once sealed
    // (kCatchUp, or the seal's fence reached us first) it serves reads only: its copy of the
    // bucket must not change while the destination catches up with it.
    if (!source || t.move != *via_move) return Admission::kWrongShard;
    if (switched) {
      if (access == Access::kRead) return Admission::kServe;
      auto it = moves_.find(bucket.id);
      const bool sealed = t.stage == TransitionStage::kCatchUp ||
                          (it != moves_.end() && it->second.move == t.move && it->second.sealed);
      return sealed ? Admission::kWrongShard : Admission::kServe;
    }
    return t.stage == TransitionStage::kPrepare ? Admission::kQueue : Admission::kWrongShard;
  }
  if (cluster::IsCommitted(t.stage)) {
    return destination ? Admission::kServe : Admission::kWrongShard;
  }
  if (switched) {
    if (!destination) return Admission::kWrongShard;  // the destination owns the bucket now
    // Sealed: writes wait for the commit; reads still go through the source.
    if (t.stage == TransitionStage::kCatchUp && access == Access::kWrite) return Admission::kQueue;
    return Admission::kServeViaSource;
  }
  // Before the commit (copy-then-switch) or the switch (switch-then-copy) the source serves,
  // until it is fenced.
  if (source) {
    if (t.stage == TransitionStage::kPrepare) return Admission::kQueue;
    auto it = moves_.find(bucket.id);
    if (it != moves_.end() && it->second.move == t.move && it->second.fenced) {
      return Admission::kQueue;
    }
    return Admission::kServe;
  }
  // A client that routes here knows a newer map than ours (the commit or switch): learn it.
  return destination ? Admission::kNotYet : Admission::kWrongShard;
}

bool StorageNode::CanAcknowledgeWrite(Point point) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_ == nullptr) return false;
  const Admission admission = AdmitLocked(map_->Lookup(point), std::nullopt, Access::kWrite);
  return admission == Admission::kServe || admission == Admission::kServeViaSource;
}

Status StorageNode::RefreshMap() {
  SHOAL_ASSIGN_OR_RETURN(
      auto response,
      runtime_.Call(Address::Coordinator(), transport::GetMapRequest{}, options_.call_timeout));
  SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::GetMapResponse>(response));
  std::lock_guard<std::mutex> lock(mu_);
  InstallLocked(body.state);
  return OkStatus();
}

void StorageNode::InstallLocked(const transport::ClusterState& state) {
  // Register new collections (idempotent, local, no yield), whatever the epoch.
  for (const auto& spec : state.collections) {
    if (collections_.count(spec.id) != 0) continue;
    if (store_->CreateCollection(spec).ok()) collections_[spec.id] = true;
  }
  if (state.map == nullptr) return;
  if (map_ != nullptr && state.map->epoch() <= map_->epoch()) return;
  map_ = state.map;
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
  exports_.Retain([&](BucketId bucket, MoveId move) {
    const BucketPlacement* placement = map_->Find(bucket);
    return placement != nullptr && placement->transition.has_value() &&
           placement->transition->move == move;
  });
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
      std::lock_guard<std::mutex> lock(mu_);
      if (map_ != nullptr) {
        const BucketPlacement& bucket = map_->Lookup(point);
        admission = AdmitLocked(bucket, via_move, access);
        if (admission == Admission::kServe || admission == Admission::kServeViaSource) {
          ++inflight_writes_[bucket.id];
          Admitted admitted{.admission = admission, .bucket = bucket.id, .move = {}, .source = {}};
          if (admission == Admission::kServeViaSource) {
            admitted.move = bucket.transition->move;
            admitted.source = bucket.transition->source.front();
          }
          return admitted;
        }
        if (admission == Admission::kWrongShard) {
          ++counters_.wrong_shard;
          return Admitted{.admission = admission, .bucket = bucket.id, .move = {}, .source = {}};
        }
        if (admission == Admission::kQueue && !counted_queue) {
          ++counters_.queued;
          counted_queue = true;
        }
      }
    }
    if (admission == Admission::kNotYet || client_epoch > epoch()) (void)RefreshMap();
    if (runtime_.Now() - start > options_.fence_timeout) {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.fence_timeouts;
      return Admitted{.admission = Admission::kNotYet, .bucket = {}, .move = {}, .source = {}};
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.queue_poll));
  }
}

void StorageNode::Release(BucketId bucket, bool write) {
  std::lock_guard<std::mutex> lock(mu_);
  --inflight_writes_[bucket];
  if (write) {
    ++counters_.writes;
  } else {
    ++counters_.reads;
  }
}

StatusOr<StorageNode::Admitted> StorageNode::AwaitRangeAdmission(MapEpoch client_epoch,
                                                                 const storage::PointRange& range,
                                                                 std::optional<MoveId> via_move) {
  const transport::Micros start = runtime_.Now();
  if (client_epoch > epoch()) (void)RefreshMap();
  while (true) {
    Admission worst = Admission::kNotYet;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (map_ != nullptr) {
        worst = Admission::kServe;
        int overlapping = 0;
        const BucketPlacement* switched = nullptr;
        for (const BucketPlacement& bucket : map_->buckets()) {
          if (!Overlaps(bucket.range, range)) continue;
          ++overlapping;
          const Admission a = AdmitLocked(bucket, via_move, Access::kRead);
          if (a == Admission::kWrongShard) {
            ++counters_.wrong_shard;
            return Admitted{.admission = a, .bucket = bucket.id, .move = {}, .source = {}};
          }
          if (a == Admission::kServeViaSource) {
            switched = &bucket;
          } else if (a != Admission::kServe) {
            worst = a;
          }
        }
        if (switched != nullptr && worst == Admission::kServe) {
          if (overlapping != 1) {
            // Part of the range is served here, part through a source: the caller's map is
            // older than ours; it splits its scan again with ours.
            ++counters_.wrong_shard;
            return Admitted{
                .admission = Admission::kWrongShard, .bucket = {}, .move = {}, .source = {}};
          }
          return Admitted{.admission = Admission::kServeViaSource,
                          .bucket = switched->id,
                          .move = switched->transition->move,
                          .source = switched->transition->source.front()};
        }
        if (worst == Admission::kServe) {
          return Admitted{.admission = worst, .bucket = {}, .move = {}, .source = {}};
        }
      }
    }
    if (worst == Admission::kNotYet || client_epoch > epoch()) (void)RefreshMap();
    if (runtime_.Now() - start > options_.fence_timeout) {
      return Admitted{.admission = Admission::kNotYet, .bucket = {}, .move = {}, .source = {}};
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.queue_poll));
  }
}

Response StorageNode::Refuse(Admission admission) {
  std::lock_guard<std::mutex> lock(mu_);
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
          [&](const auto&) {
            return Response::Error(UnimplementedError("not a storage node request"));
          },
      },
      request);
}

Status StorageNode::EnsureCollection(CollectionId collection) {
  auto known = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return collections_.count(collection) != 0;
  };
  if (known()) return OkStatus();
  SHOAL_RETURN_IF_ERROR(RefreshMap());
  if (known()) return OkStatus();
  return storage::StorageError(storage::ErrorReason::kUnknownCollection,
                               fmt::format("unknown collection {}", collection.DebugString()));
}

Response StorageNode::HandleWrite(const transport::WriteRequest& request) {
  if (Status s = EnsureCollection(request.collection); !s.ok()) return Response::Error(s);
  const Point point = PointOf(request.collection, request.primary_key);
  auto admitted = AwaitAdmission(request.epoch, point, request.via_move, Access::kWrite);
  if (!admitted.ok()) return Response::Error(admitted.status());
  if (admitted->admission == Admission::kServeViaSource) return ForwardWrite(request, *admitted);
  if (admitted->admission != Admission::kServe) return Refuse(admitted->admission);
  const BucketId bucket = admitted->bucket;
  if (request.via_move.has_value()) {
    // A write the destination of a switch-then-copy move forwarded: tests delay it here.
    if (Status s = runtime_.Failpoint("source.before_forwarded_write"); !s.ok()) {
      Release(bucket, /*write=*/true);
      return Response::Error(s);
    }
  }

  // The write runs outside mu_; Fence waits for the in-flight count to drop to zero, so it
  // reports a sequence that includes this write.
  StatusOr<uint64_t> version = InternalError("unset");
  const std::string_view pk = request.primary_key;
  const std::string_view body = request.body;
  switch (request.op) {
    case transport::WriteOp::kInsert:
      version = store_->Insert(request.collection, pk, body);
      break;
    case transport::WriteOp::kUpdate:
      version = store_->Update(request.collection, pk, body);
      break;
    case transport::WriteOp::kUpsert:
      version = store_->Upsert(request.collection, pk, body);
      break;
    case transport::WriteOp::kDelete:
      version = store_->Delete(request.collection, pk);
      break;
    case transport::WriteOp::kCompareAndSet:
      version = store_->CompareAndSet(request.collection, pk, request.expected_version, body);
      break;
  }
  Release(bucket, /*write=*/true);
  if (!version.ok()) return Response::Error(version.status());
  // A write run for a switch-then-copy destination counts there, where it is acknowledged.
  if (!request.via_move.has_value()) RecordWrite(request.collection, request.primary_key);
  return Response::Ok(transport::WriteResponse{.version = *version});
}

Response StorageNode::HandleGet(const transport::GetRequest& request) {
  if (Status s = EnsureCollection(request.collection); !s.ok()) return Response::Error(s);
  const Point point = PointOf(request.collection, request.primary_key);
  auto admitted = AwaitAdmission(request.epoch, point, request.via_move, Access::kRead);
  if (!admitted.ok()) return Response::Error(admitted.status());
  if (admitted->admission == Admission::kServeViaSource) return ForwardGet(request, *admitted);
  if (admitted->admission != Admission::kServe) return Refuse(admitted->admission);
  storage::GetOptions get;
  get.include_tombstones = request.via_move.has_value() && request.include_tombstones;
  StatusOr<storage::Document> document = store_->Get(request.collection, request.primary_key, get);
  Release(admitted->bucket, /*write=*/false);
  if (!document.ok()) return Response::Error(document.status());
  return Response::Ok(transport::GetResponse{.document = std::move(*document)});
}

Response StorageNode::HandleScan(const transport::ScanRequest& request) {
  auto admitted = AwaitRangeAdmission(request.epoch, request.range, request.via_move);
  if (!admitted.ok()) return Response::Error(admitted.status());
  if (admitted->admission == Admission::kServeViaSource) return ForwardScan(request, *admitted);
  if (admitted->admission != Admission::kServe) return Refuse(admitted->admission);
  storage::ScanOptions scan;
  scan.include_tombstones = request.via_move.has_value() && request.include_tombstones;
  scan.range = request.range;
  scan.collection = request.collection;
  scan.filter = request.filter;
  scan.cursor = request.cursor;
  scan.max_documents = std::clamp<uint32_t>(request.max_documents, 1, options_.max_scan_documents);
  scan.max_page_bytes = request.max_bytes;
  StatusOr<storage::ScanPage> page = store_->Scan(scan);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.reads;
  }
  if (!page.ok()) return Response::Error(page.status());
  return Response::Ok(transport::ScanResponse{.documents = std::move(page->documents),
                                              .next_cursor = std::move(page->next_cursor)});
}

Response StorageNode::HandleInstallMap(const transport::InstallMapRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  InstallLocked(request.state);
  return Response::Ok();
}

StatusOr<const BucketPlacement*> StorageNode::MoveBucketLocked(BucketId bucket, MoveId move,
                                                               bool as_source) const {
  const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(bucket);
  if (placement == nullptr || !placement->transition.has_value() ||
      placement->transition->move != move) {
    return transport::MakeClusterError(
        transport::ClusterError::kStaleMove,
        fmt::format("n{}: {} of {} is not in flight at {}", options_.id.value(), move.DebugString(),
                    bucket.DebugString(), map_ ? map_->epoch().DebugString() : "no map"));
  }
  const auto& t = *placement->transition;
  if (!Contains(as_source ? t.source : t.destination, options_.id)) {
    return transport::MakeClusterError(
        transport::ClusterError::kStaleMove,
        fmt::format("n{} is not the {} of {}", options_.id.value(),
                    as_source ? "source" : "destination", move.DebugString()));
  }
  return placement;
}

Response StorageNode::HandleExport(const transport::ExportBucketRequest& request) {
  // The coordinator published the BEGIN map before this request; fetch it if it was lost.
  for (int attempt = 0; attempt < 2; ++attempt) {
    storage::PointRange range;
    std::string directory;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) {
        range = ToPointRange((*placement)->range);
        directory = fmt::format("{}/moves/{}-{}", options_.data_dir, request.move.DebugString(),
                                ++export_counter_);
        auto& record = moves_[request.bucket];
        if (record.move != request.move) record = MoveRecord::New(request.move, /*source=*/true, 0);
      } else if (attempt == 1) {
        return Response::Error(placement.status());
      }
    }
    if (!directory.empty()) {
      // Outside mu_: exporting a large bucket takes long and serving goes on meanwhile.
      storage::ExportOptions export_options;
      export_options.directory = directory;
      StatusOr<storage::ExportedRange> exported = InternalError("export did not run");
      runtime_.RunAtLowerPriority(options_.background_nice,
                                  [&] { exported = store_->ExportRange(range, export_options); });
      if (!exported.ok()) return Response::Error(exported.status());
      if (Status s = exports_.Register(request.bucket, request.move, *exported); !s.ok()) {
        return Response::Error(s);
      }
      return Response::Ok(transport::ExportBucketResponse{.exported = std::move(*exported)});
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  return Response::Error(InternalError("unreachable"));
}

Response StorageNode::HandleIngest(const transport::IngestBucketRequest& request) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<storage::PointRange> range;
    NodeId source;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
      if (placement.ok()) {
        if (RoleLocked(**placement) != LocalRole::kAdding) {
          return Response::Error(FailedPreconditionError("ingest into a bucket that is served"));
        }
        range = ToPointRange((*placement)->range);
        source = (*placement)->transition->source.front();
        if (!(request.exported.range == *range)) {
          return Response::Error(InvalidArgumentError("exported range is not the bucket's"));
        }
        if (move_io_[request.bucket] > 0) {
          return Response::Error(transport::MakeClusterError(
              transport::ClusterError::kNotServing,
              fmt::format("n{}: {} is being staged; retry", options_.id.value(),
                          request.bucket.DebugString())));
        }
        // No catch-up applies while the range is re-staged: it needs the record, the ingest
        // needs no apply running (both hold move_io_ while they write).
        moves_.erase(request.bucket);
        ++move_io_[request.bucket];
      } else if (attempt == 1) {
        return Response::Error(placement.status());
      }
    }
    if (range.has_value()) {
      // Outside mu_ (MOVE I/O OUTSIDE THE LOCK): other buckets are served meanwhile.
      Status staged = OkStatus();
      runtime_.RunAtLowerPriority(options_.background_nice,
                                  [&] { staged = StageIngest(*range, request, source); });
      std::lock_guard<std::mutex> lock(mu_);
      --move_io_[request.bucket];
      if (!staged.ok()) return Response::Error(staged);
      // The move may have ended while the files went in; its DropBucket waited for us.
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
      if (!placement.ok()) return Response::Error(placement.status());
      moves_[request.bucket] =
          MoveRecord::New(request.move, /*source=*/false, request.exported.sequence);
      counters_.bytes_ingested += request.exported.bytes;
      break;
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  if (Status s = runtime_.Failpoint("destination.after_ingest"); !s.ok()) {
    return Response::Error(s);
  }
  return Response::Ok();
}

Status StorageNode::StageIngest(const storage::PointRange& range,
                                const transport::IngestBucketRequest& request, NodeId source) {
  const storage::ExportedRange& exported = request.exported;
  // Whatever an earlier, aborted attempt staged goes first.
  SHOAL_RETURN_IF_ERROR(store_->DropRange(range));
  storage::IngestOptions ingest;
  ingest.require_adding_buckets = false;
  bool local =
      options_.move_file_transfer == MoveFileTransfer::kAuto && runtime_.SharesFilesystem();
  for (const std::string& file : exported.files) {
    std::error_code ec;
    local = local && std::filesystem::is_regular_file(file, ec);
  }
  if (local || exported.files.empty()) {
    SHOAL_RETURN_IF_ERROR(store_->IngestRange(exported, ingest));
    std::lock_guard<std::mutex> lock(mu_);
    counters_.move_files_read_locally += exported.files.size();
  } else {
    const std::string staging = StagingDirectory(options_.data_dir, request.move, request.bucket);
    FetchStats stats;
    auto copied =
        FetchExportedFiles(runtime_, source, request.move, request.bucket, exported, staging,
                           FetchOptions{.chunk_bytes = options_.move_chunk_bytes,
                                        .attempts = options_.move_chunk_attempts,
                                        .call_timeout = options_.call_timeout,
                                        .retry_pause = 10'000},
                           &stats);
    {
      std::lock_guard<std::mutex> lock(mu_);
      counters_.move_files_fetched += stats.files;
      counters_.move_bytes_fetched += stats.bytes;
      counters_.move_chunk_retries += stats.retries;
    }
    if (!copied.ok()) return copied.status();
    // The copies are ours: the engine links them instead of copying them once more.
    ingest.move_files = true;
    const Status ingested = store_->IngestRange(*copied, ingest);
    std::error_code ec;
    std::filesystem::remove_all(staging, ec);
    SHOAL_RETURN_IF_ERROR(ingested);
  }
  return store_->ObserveVersion(exported.max_version);
}

Response StorageNode::HandleFetchMoveFile(const transport::FetchMoveFileRequest& request) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) break;
      if (attempt == 1) return Response::Error(placement.status());
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  // Outside mu_ (MOVE I/O OUTSIDE THE LOCK): a read of an export file.
  auto chunk = exports_.Read(request);
  if (!chunk.ok()) return Response::Error(chunk.status());
  return Response::Ok(std::move(*chunk));
}

Response StorageNode::HandleCatchUp(const transport::CatchUpRequest& request) {
  uint64_t position = request.after_sequence;
  uint64_t applied = 0;
  int idle_rounds = 0;
  // MOVE CPU: the drain to a fence's sequence runs at request priority (clients wait for it).
  const int nice = request.until_sequence.has_value() ? 0 : options_.background_nice;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
      if (!placement.ok()) return Response::Error(placement.status());
      auto it = moves_.find(request.bucket);
      if ((it == moves_.end() || it->second.move != request.move) &&
          (*placement)->transition->mode == cluster::TransitionMode::kSwitchThenCopy) {
        // A switched destination has no ingest to wait for: it catches up with the source
        // before the commit (transition.h, kCatchUp).
        it = moves_
                 .insert_or_assign(request.bucket,
                                   MoveRecord::New(request.move, /*source=*/false, 0))
                 .first;
      }
      if (it == moves_.end() || it->second.move != request.move || it->second.source) {
        return Response::Error(transport::MakeClusterError(transport::ClusterError::kStaleMove,
                                                           "catch-up before ingest"));
      }
      position = std::max(position, it->second.applied_sequence);
    }
    if (request.until_sequence.has_value() && position >= *request.until_sequence) break;
    transport::ReadChangesRequest read{.move = request.move,
                                       .bucket = request.bucket,
                                       .after_sequence = position,
                                       .max_changes = 1000};
    StatusOr<Response> response = InternalError("read did not run");
    runtime_.RunAtLowerPriority(nice, [&] {
      response = runtime_.Call(Address::Node(request.source), read, options_.call_timeout);
    });
    if (!response.ok()) return Response::Error(response.status());
    auto changes = transport::BodyAs<transport::ReadChangesResponse>(std::move(*response));
    if (!changes.ok()) return Response::Error(changes.status());
    auto move_live = [&]() -> MoveRecord* {
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
      auto it = moves_.find(request.bucket);
      if (!placement.ok() || it == moves_.end() || it->second.move != request.move) return nullptr;
      return &it->second;
    };
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (move_live() == nullptr) {
        return Response::Error(transport::MakeClusterError(transport::ClusterError::kStaleMove,
                                                           "move ended during catch-up"));
      }
      ++move_io_[request.bucket];
    }
    // Outside mu_ (MOVE I/O OUTSIDE THE LOCK); apply-if-newer, so a concurrent retry of this
    // catch-up applying the same changes is harmless.
    Status applied_status = OkStatus();
    if (!changes->changes.empty()) {
      runtime_.RunAtLowerPriority(
          nice, [&] { applied_status = store_->ApplyChanges(changes->changes).status(); });
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      --move_io_[request.bucket];
      if (!applied_status.ok()) return Response::Error(applied_status);
      MoveRecord* record = move_live();
      if (record == nullptr) {
        return Response::Error(transport::MakeClusterError(transport::ClusterError::kStaleMove,
                                                           "move ended during catch-up"));
      }
      record->applied_sequence = std::max(record->applied_sequence, changes->next_sequence);
      position = record->applied_sequence;
      counters_.changes_applied += changes->changes.size();
    }
    applied += changes->changes.size();
    if (Status s = runtime_.Failpoint("destination.after_apply"); !s.ok()) {
      return Response::Error(s);
    }
    const bool progressed = changes->next_sequence > read.after_sequence;
    if (request.until_sequence.has_value()) {
      if (position >= *request.until_sequence) break;
      if (!progressed) {
        if (++idle_rounds > 20) {
          return Response::Error(UnavailableError("catch-up makes no progress"));
        }
        if (Status s = runtime_.Sleep(1000); !s.ok()) return Response::Error(s);
      }
    } else if (changes->changes.size() < request.stop_below) {
      break;
    }
  }
  return Response::Ok(transport::CatchUpResponse{.applied_sequence = position, .applied = applied});
}

Response StorageNode::HandleReadChanges(const transport::ReadChangesRequest& request) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<storage::PointRange> range;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) {
        range = ToPointRange((*placement)->range);
      } else if (attempt == 1) {
        return Response::Error(placement.status());
      }
    }
    if (range.has_value()) {
      // Outside mu_ (MOVE I/O OUTSIDE THE LOCK): a read of the log; the destination checks
      // again that the move is in flight before applying what it returns.
      auto batch = store_->ReadChangesSince(*range, request.after_sequence,
                                            std::max<uint32_t>(request.max_changes, 1));
      if (!batch.ok()) return Response::Error(batch.status());
      return Response::Ok(transport::ReadChangesResponse{.changes = std::move(batch->changes),
                                                         .next_sequence = batch->next_sequence});
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  return Response::Error(InternalError("unreachable"));
}

Response StorageNode::HandleFence(const transport::FenceRequest& request) {
  // The fence must be recorded against a map that holds the move (see the FENCE invariant).
  bool fenced = false;
  for (int attempt = 0; attempt < 2 && !fenced; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) {
        auto& record = moves_[request.bucket];
        if (record.move != request.move) record = MoveRecord::New(request.move, /*source=*/true, 0);
        record.fenced = true;
        // A fence of a switched move is its seal (a late copy of the kPrepare fence seals too:
        // that only makes the destination's writes wait for the commit).
        const auto& t = *(*placement)->transition;
        if (t.mode == cluster::TransitionMode::kSwitchThenCopy &&
            (t.stage == TransitionStage::kCopy || t.stage == TransitionStage::kCatchUp)) {
          record.sealed = true;
        }
        fenced = true;
        break;
      }
      if (attempt == 1) return Response::Error(placement.status());
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  if (Status s = runtime_.Failpoint("source.after_fence"); !s.ok()) return Response::Error(s);
  // Writes admitted before the fence finish before it reports the sequence.
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = inflight_writes_.find(request.bucket);
      if (it == inflight_writes_.end() || it->second == 0) {
        return Response::Ok(transport::FenceResponse{.sequence = store_->LatestSequence()});
      }
    }
    if (Status s = runtime_.Sleep(options_.queue_poll); !s.ok()) return Response::Error(s);
  }
}

Response StorageNode::HandleDrop(const transport::DropBucketRequest& request) {
  if (epoch() < request.epoch) {
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (map_ == nullptr || map_->epoch() < request.epoch) {
    return Response::Error(UnavailableError("map behind the drop's epoch"));
  }
  for (const BucketPlacement& bucket : map_->buckets()) {
    if (!Overlaps(bucket.range, request.range)) continue;
    const LocalRole role = RoleLocked(bucket);
    const bool committed_source =
        role == LocalRole::kLeaving && cluster::IsCommitted(bucket.transition->stage);
    if (role == LocalRole::kReadWrite || role == LocalRole::kAdding ||
        (role == LocalRole::kLeaving && !committed_source)) {
      return Response::Error(FailedPreconditionError(
          fmt::format("n{} still {} {} at {}", options_.id.value(), ToString(role),
                      bucket.id.DebugString(), map_->epoch().DebugString())));
    }
  }
  // An ingest or apply of the ended move that passed its check before our map arrived finishes
  // first (MOVE I/O OUTSIDE THE LOCK); none can start now: the map no longer holds the move.
  while (move_io_[request.bucket] > 0) {
    lock.unlock();
    if (Status s = runtime_.Sleep(options_.queue_poll); !s.ok()) return Response::Error(s);
    lock.lock();
  }
  move_io_.erase(request.bucket);
  if (Status s = store_->DropRange(request.range); !s.ok()) return Response::Error(s);
  moves_.erase(request.bucket);
  exports_.Forget(request.bucket);
  // Export files of the move are no longer needed.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.data_dir + "/moves", ec)) {
    if (entry.path().filename().string().rfind(request.move.DebugString() + "-", 0) == 0) {
      std::filesystem::remove_all(entry.path(), ec);
    }
  }
  return Response::Ok();
}

Response StorageNode::HandleLoad() {
  // The buckets are chosen under mu_; sizing them (an exact scan by default) runs outside it, so
  // reads, writes and map installs go on meanwhile.
  std::vector<std::pair<BucketId, storage::PointRange>> served;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_ != nullptr) {
      for (const BucketPlacement& bucket : map_->buckets()) {
        const LocalRole role = RoleLocked(bucket);
        const bool committed_away = role == LocalRole::kLeaving && bucket.transition.has_value() &&
                                    cluster::IsCommitted(bucket.transition->stage);
        if ((role == LocalRole::kReadWrite || role == LocalRole::kLeaving) && !committed_away) {
          served.emplace_back(bucket.id, ToPointRange(bucket.range));
        }
      }
    }
  }
  transport::BucketLoadResponse out;
  out.hot_keys = HotKeys();
  if (options_.exact_load_stats) {
    out.buckets = ExactLoads(served);
    return Response::Ok(out);
  }
  for (const auto& [id, range] : served) {
    auto stats = store_->EstimateStats(range);
    if (!stats.ok()) continue;
    out.buckets.push_back(transport::BucketLoad{
        .bucket = id, .bytes = stats->live_bytes, .documents = stats->documents});
  }
  return Response::Ok(out);
}

uint64_t StorageNode::ActivityLocked() const {
  return counters_.writes + counters_.changes_applied + counters_.bytes_ingested;
}

uint64_t StorageNode::ChangesLocked() const { return counters_.writes + counters_.changes_applied; }

std::vector<transport::BucketLoad> StorageNode::ExactLoads(
    const std::vector<std::pair<BucketId, storage::PointRange>>& served) {
  const transport::Micros now = runtime_.Now();
  const transport::Micros max_age = options_.load_stats_max_age;
  uint64_t activity;
  uint64_t changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    activity = ActivityLocked();
    changes = ChangesLocked();
  }
  // A cached size may be off by the writes to its bucket since; without per-bucket counts,
  // assume the node's writes spread evenly over its buckets.
  const auto written = [&](const CachedLoad& cached) {
    return (changes - cached.changes) / std::max<uint64_t>(1, served.size());
  };
  // Which buckets to scan: every bucket without a cached size of its current range, and the
  // oldest of the stale ones, at most an eighth of the served buckets.
  std::vector<size_t> scan;
  {
    std::lock_guard<std::mutex> lock(load_mu_);
    absl::flat_hash_set<BucketId> ids;
    for (const auto& [id, range] : served) ids.insert(id);
    for (auto it = load_cache_.begin(); it != load_cache_.end();) {
      if (ids.contains(it->first)) {
        ++it;
      } else {
        load_cache_.erase(it++);
      }
    }
    std::vector<std::pair<transport::Micros, size_t>> stale;  // (computed, index in served)
    for (size_t i = 0; i < served.size(); ++i) {
      auto it = load_cache_.find(served[i].first);
      if (it == load_cache_.end() || it->second.range != served[i].second) {
        scan.push_back(i);
      } else if (max_age <= 0) {
        scan.push_back(i);
      } else if (it->second.activity != activity &&
                 (now - it->second.computed >= max_age ||
                  written(it->second) >= std::max<uint64_t>(1, it->second.documents / 8))) {
        stale.emplace_back(it->second.computed, i);
      }
    }
    std::sort(stale.begin(), stale.end());
    const size_t budget = std::max<size_t>(1, served.size() / 8);
    for (size_t k = 0; k < stale.size() && k < budget; ++k) scan.push_back(stale[k].second);
  }
  // The scans run without any lock.
  std::vector<std::pair<size_t, storage::BucketStats>> scanned;
  for (size_t i : scan) {
    auto stats = store_->ComputeStats(served[i].second);
    if (stats.ok()) scanned.emplace_back(i, *stats);
  }
  std::vector<transport::BucketLoad> loads;
  std::lock_guard<std::mutex> lock(load_mu_);
  for (const auto& [i, stats] : scanned) {
    load_cache_[served[i].first] = CachedLoad{.range = served[i].second,
                                              .bytes = stats.live_bytes,
                                              .documents = stats.documents,
                                              .activity = activity,
                                              .changes = changes,
                                              .computed = now};
  }
  for (const auto& [id, range] : served) {
    auto it = load_cache_.find(id);
    if (it == load_cache_.end() || it->second.range != range) continue;
    loads.push_back(transport::BucketLoad{
        .bucket = id, .bytes = it->second.bytes, .documents = it->second.documents});
  }
  return loads;
}

void StorageNode::HeartbeatLoop() {
  ActiveGuard guard(this);
  while (runtime_.Alive()) {
    transport::HeartbeatRequest heartbeat{.node = options_.id, .epoch = epoch()};
    auto response = runtime_.Call(Address::Coordinator(), heartbeat, options_.call_timeout);
    if (response.ok()) {
      auto body = transport::BodyAs<transport::HeartbeatResponse>(std::move(*response));
      if (body.ok() && body->epoch > epoch()) (void)RefreshMap();
    } else if (response.status().code() == StatusCode::kCancelled) {
      return;
    }
    if (!runtime_.Sleep(options_.heartbeat_interval).ok()) return;
  }
}

}  // namespace shoal::node
