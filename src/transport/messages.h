#pragma once

// The typed messages between Shoal processes: client -> node (data), coordinator -> node (moves,
// maps), node -> node (catch-up), anyone -> coordinator (maps, membership). One Request variant
// and one Response (a status, a body variant and, for WRONG_SHARD, the route). The gRPC
// transport (src/net/wire_codec.h) maps each struct onto a proto message one to one; in-process
// transports pass them as values. docs/design/cluster.md describes the protocol that uses them.
//
// Value types; thread-compatible.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/bucket_values.h"
#include "src/storage/document.h"
#include "src/storage/mutation.h"
#include "src/storage/point_range.h"
#include "src/storage/predicate.h"
#include "src/storage/replica_position.h"

namespace shoal::transport {

// A process: the coordinator, a storage node, or a client.
struct Address {
  enum class Kind : uint8_t { kCoordinator = 0, kNode = 1, kClient = 2 };
  Kind kind = Kind::kCoordinator;
  uint32_t id = 0;

  [[nodiscard]] static Address Coordinator() { return Address{Kind::kCoordinator, 0}; }
  [[nodiscard]] static Address Node(NodeId node) { return Address{Kind::kNode, node.value()}; }
  [[nodiscard]] static Address Client(uint32_t id) { return Address{Kind::kClient, id}; }
  [[nodiscard]] NodeId node() const { return NodeId(id); }
  [[nodiscard]] std::string DebugString() const;

  friend auto operator<=>(const Address&, const Address&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const Address& a) {
    return H::combine(std::move(h), static_cast<uint8_t>(a.kind), a.id);
  }
};

// Why a cluster-level request failed, carried as a Status payload (like storage::ErrorReason):
//   kWrongShard   kFailedPrecondition  this node may not serve the key/bucket at its epoch; the
//                                      Response carries the node's map as the route
//   kNotServing   kUnavailable         not yet (a destination that has not learned the commit,
//                                      a fenced bucket whose fence timed out): retry later
//   kStaleMove    kFailedPrecondition  a message of a move attempt this node no longer runs
//   kNotEnoughReplicas kUnavailable    the bucket has fewer in-sync copies than min_in_sync:
//                                      writes wait for a repair, reads go on (replication.md)
//   kStaleTerm    kFailedPrecondition  node to node: a replication message of a primary or a
//                                      term the backup's map no longer has
enum class ClusterError : uint8_t {
  kWrongShard = 1,
  kNotServing = 2,
  kStaleMove = 3,
  kNotEnoughReplicas = 4,
  kStaleTerm = 5,
};

[[nodiscard]] Status MakeClusterError(ClusterError error, std::string_view message);
[[nodiscard]] std::optional<ClusterError> ClusterErrorOf(const Status& status);

// ---- data operations: client -> node ----

enum class WriteOp : uint8_t {
  kInsert,
  kUpdate,
  kUpsert,
  kDelete,
  kCompareAndSet,
};
[[nodiscard]] std::string_view ToString(WriteOp op);

// Data requests may be forwarded by the destination of a switch-then-copy move to its source
// while the move is in kCopy (`via_move` set): the source, which answers clients WRONG_SHARD
// then, serves exactly these (docs/design/cluster.md, "Switch-then-copy").
struct WriteRequest {
  MapEpoch epoch{};
  WriteOp op = WriteOp::kUpsert;
  CollectionId collection{};
  std::string primary_key{};
  std::string body{};
  uint64_t expected_version = 0;  // kCompareAndSet
  std::optional<MoveId> via_move{};
};
struct WriteResponse {
  uint64_t version = 0;
};

// Several writes in one message (docs/design/cluster.md, "Batch writes"). A batch is NOT atomic:
// the node applies each write as it would a WriteRequest at `epoch` (same admission, fencing,
// switch-then-copy forwarding and storage checks), in order, and answers each in its own slot;
// a write to a key the node does not serve gets WRONG_SHARD there and the others still apply.
// Each acknowledged write is atomic and durable on its own. Limits (ValidateBatch), checked by
// the client before sending and by the node before applying anything:
//   - 1 to kMaxBatchWrites writes (0: kInvalidArgument; more: kResourceExhausted);
//   - at most kMaxBatchBytes of keys plus bodies (more: kResourceExhausted): 16 full-size
//     (1 MiB) bodies, and a quarter of the default message limit (64 MiB), so the request with
//     its framing and the response always fit;
//   - the writes carry no via_move (kInvalidArgument): forwarding is per write, never batched.
// Each write's own `epoch` is ignored: the batch's applies to all.
inline constexpr size_t kMaxBatchWrites = 1000;
inline constexpr size_t kMaxBatchBytes = size_t{16} << 20;
struct BatchWriteRequest {
  MapEpoch epoch{};
  std::vector<WriteRequest> writes{};
};
struct BatchWriteResult {
  Status status{};
  uint64_t version = 0;  // with an OK status
};
// One result per write, in the request's order.
struct BatchWriteResponse {
  std::vector<BatchWriteResult> results{};
};
// OK iff `writes` is a batch within the limits above.
[[nodiscard]] Status ValidateBatch(const std::vector<WriteRequest>& writes);

struct GetRequest {
  MapEpoch epoch{};
  CollectionId collection{};
  std::string primary_key{};
  std::optional<MoveId> via_move{};
  bool include_tombstones = false;  // only with via_move
  // Any copy may answer, possibly stale (docs/design/replication.md §5): a backup answers only
  // while it heard from its primary within NodeOptions::max_staleness, and only a value whose
  // write is committed; else NOT_SERVING (read the primary).
  bool any_replica = false;
};
struct GetResponse {
  storage::Document document{};
};

// Several gets in one message (docs/design/network.md, "Coalescing"). The node answers each as
// it would a GetRequest at `epoch` (same admission, fencing, switch-then-copy forwarding and
// storage checks: StorageNode::HandleGet), in order, each in its own slot; a key the node does
// not serve gets WRONG_SHARD in its slot (the response then carries the node's map as the
// route) and the others are still read. Limits (ValidateBatchGet), checked by the client before
// sending and by the node before reading anything:
//   - 1 to kMaxBatchGets gets (0: kInvalidArgument; more: kResourceExhausted): with documents
//     of at most 1 MiB of body and 8 KiB of key (storage::DocumentLimits), the response stays
//     at about half of the default message limit (64 MiB);
//   - the gets carry no via_move and no include_tombstones (kInvalidArgument): forwarding is
//     per get, never batched.
// Each get's own `epoch` is ignored: the batch's applies to all.
inline constexpr size_t kMaxBatchGets = 32;
struct BatchGetRequest {
  MapEpoch epoch{};
  std::vector<GetRequest> gets{};
};
struct BatchGetResult {
  Status status{};
  storage::Document document{};  // with an OK status
};
// One result per get, in the request's order.
struct BatchGetResponse {
  std::vector<BatchGetResult> results{};
};
// OK iff `gets` is a batch within the limits above.
[[nodiscard]] Status ValidateBatchGet(const std::vector<GetRequest>& gets);

// One page of a bucket's documents, in (point, collection, primary key) order. The node serves
// it only if `bucket` is a bucket of its map whose range holds `range` (StorageNode::HandleScan):
// otherwise WRONG_SHARD for a client with an older map, kInvalidArgument for one at the node's
// epoch.
struct ScanRequest {
  MapEpoch epoch{};
  BucketId bucket{};
  storage::PointRange range{};  // the bucket's range at the client's epoch, or part of it
  std::optional<CollectionId> collection{};
  storage::DocumentFilter filter{};
  std::string cursor{};  // "" = from the start of the range
  // At least 1 (ValidateScan); a node cuts a page at its own limit, a stream refuses more than
  // its limit.
  uint32_t max_documents = 1000;
  std::optional<MoveId> via_move{};
  bool include_tombstones = false;  // only with via_move
  // Key + body bytes per page, 0 = no hard bound: the page ends before the document that would
  // cross it, but its first document always goes (a streamed scan sets it; network.md).
  uint32_t max_bytes = 0;
};
struct ScanResponse {
  std::vector<storage::Document> documents{};
  std::string next_cursor{};  // "" = the range is exhausted
};
// OK iff `scan` asks for at least one document per page; checked by the node for every scan and
// by a stream before its first page.
[[nodiscard]] Status ValidateScan(const ScanRequest& scan);

// ---- maps and membership: anyone -> coordinator, coordinator -> node ----

struct ClusterState {
  cluster::ShardMapPtr map{};
  std::vector<storage::CollectionSpec> collections{};
  // The cluster's identity, made once when its metadata is created (MapCommitter): a node
  // installs no state of another cluster than the one its data directory belongs to
  // (docs/design/network.md, "Cluster identity"). 0: not known.
  uint64_t cluster_id = 0;
};

// The refusal of a cluster id that is not the one a node's data directory belongs to: by the node
// offered a ClusterState, by the coordinator offered a heartbeat. kFailedPrecondition.
[[nodiscard]] Status OtherClusterError(uint64_t directory_cluster, uint64_t offered_cluster);

struct GetMapRequest {};
struct GetMapResponse {
  ClusterState state{};
};

struct InstallMapRequest {
  ClusterState state{};
};
// A bucket at a term: what a keepalive renews and a seal closes. In a replication message also
// the primary's watermark: every write of the bucket through `committed` is on every replica.
struct BucketTerm {
  BucketId bucket{};
  Term term{};
  uint64_t committed = 0;
};
// A bucket held quiesced by the quiesce `token` names (QuiesceRequest).
struct QuiescedBucket {
  BucketId bucket{};
  uint64_t token = 0;
};
struct HeartbeatRequest {
  NodeId node{};
  MapEpoch epoch{};  // the node's current epoch
  // The node's BucketStore (its data directory's identity; 0: not known) and the start of its
  // process (new at every start): the coordinator ends the terms a restarted primary held
  // (docs/design/replication.md §4.4, §4.6).
  uint64_t store_id = 0;
  uint64_t incarnation = 0;
  // Buckets whose current term this node holds closed, so that only a failover (a new term)
  // lets them serve again: as their replicated primary at a term it held before it restarted,
  // or as a backup sealed at that term by a failover that did not finish (its coordinator
  // crashed after the seal, docs/design/replication.md §4.5).
  std::vector<BucketTerm> fenced{};
  // Buckets this node has held quiesced (QuiesceRequest) for longer than its fence timeout: the
  // coordinator releases those no split or merge will follow.
  std::vector<QuiescedBucket> quiesced{};
  // The cluster the node's data directory belongs to (0: none yet): the coordinator refuses a
  // node of another cluster.
  uint64_t cluster_id = 0;
};
struct HeartbeatResponse {
  MapEpoch epoch{};  // the coordinator's current epoch
  // Of HeartbeatRequest::quiesced: the quiesces to lift (writes go on).
  std::vector<QuiescedBucket> released{};
};
struct CreateCollectionRequest {
  std::string name{};
};
struct CreateCollectionResponse {
  storage::CollectionSpec collection{};
};

// ---- one bucket move (ARCHITECTURE.md §3): coordinator -> source / destination ----

// Source: export the bucket's range at a snapshot. The files stay in the source's data
// directory until DropMoveFiles or the move ends.
struct ExportBucketRequest {
  MoveId move{};
  BucketId bucket{};
};
struct ExportBucketResponse {
  storage::ExportedRange exported{};
};

// Destination: stage the exported files invisibly (the bucket becomes kAdding locally). The
// destination copies each file from the source of the move in its map (FetchMoveFile, checked
// chunk by chunk and end to end) into its own data directory; only a runtime whose nodes share
// one filesystem lets it read the source's paths directly (NodeOptions::move_file_transfer).
struct IngestBucketRequest {
  MoveId move{};
  BucketId bucket{};
  storage::ExportedRange exported{};
};

// Destination -> source: one chunk of file `file_index` of the source's export of (move,
// bucket) taken at `sequence` (ExportedRange::sequence), from `offset` on. The source serves only
// the files of its live export of that move, named by their index in it (never a path); an
// unknown move, bucket, export or index is an error (kStaleMove, or kNotFound for an index or
// offset past the end). `max_bytes` must lie in [1, kMaxMoveFileChunkBytes]; outside it the
// request is refused (kInvalidArgument). docs/design/cluster.md, "File transfer".
inline constexpr uint32_t kMaxMoveFileChunkBytes = 4u << 20;  // well below any message limit
struct FetchMoveFileRequest {
  MoveId move{};
  BucketId bucket{};
  uint64_t sequence = 0;
  uint32_t file_index = 0;
  uint64_t offset = 0;
  uint32_t max_bytes = 1u << 20;
};
// `data` is the file's bytes from the offset (at most max_bytes; fewer only at the end of the
// file), `chunk_crc32c` their CRC-32C; `file_bytes` and `file_crc32c` describe the whole file as
// exported, so that the destination verifies its copy end to end.
struct FetchMoveFileResponse {
  std::string data{};
  uint32_t chunk_crc32c = 0;
  uint64_t file_bytes = 0;
  uint32_t file_crc32c = 0;
  uint32_t file_count = 0;  // files in the export
};

// Destination of a copy-then-switch move of a replicated bucket, before any export: resume the
// copy of the bucket this node still holds instead of ingesting a snapshot
// (docs/design/replication.md §6, "Log retention = hinted handoff"). The destination asks the
// source, the primary, whether its log holds every write after the copy's position
// (RetainedLogRequest). If so it clears its copy's state before anything is applied (a catch-up
// that fails halfway leaves no copy to be taken for one again) and answers the sequence the
// catch-up starts after; there is no ingest. `store_id` is the store the map binds the
// destination to: another store holds no copy of the bucket's history.
struct ResumeCopyRequest {
  MoveId move{};
  BucketId bucket{};
  NodeId source{};
  uint64_t store_id = 0;
};
// Destination -> source of that move: whether the source's log holds every write of the bucket
// after `copy`, a prefix of its history (§4.3).
struct RetainedLogRequest {
  MoveId move{};
  BucketId bucket{};
  storage::ReplicaState copy{};
};
// The answer to both. `sequence`: the copy resumes, and the writes after that engine sequence of
// the source are what it lacks. Otherwise `refused` says why (no copy, a divergent one, a log
// not retained) and the copy is rebuilt from a snapshot. `position`: the copy's.
struct ResumeCopyResponse {
  std::optional<uint64_t> sequence = std::nullopt;
  std::string refused{};
  storage::ReplicaPosition position{};
};

// Destination: pull the source's writes after `after_sequence` until fewer than
// `stop_below` remain per round, or, with `until_sequence` set, until that sequence is reached.
struct CatchUpRequest {
  MoveId move{};
  BucketId bucket{};
  NodeId source{};
  uint64_t after_sequence = 0;
  std::optional<uint64_t> until_sequence;
  uint32_t stop_below = 64;
  // With until_sequence, for a copy of a replicated bucket: the primary's state at its fence,
  // which the new copy stores once it holds everything up to until_sequence, so that it joins
  // the primary's stream at the fence position (docs/design/replication.md §6).
  std::optional<storage::ReplicaState> replica = {};
};
struct CatchUpResponse {
  uint64_t applied_sequence = 0;
  uint64_t applied = 0;  // changes applied by this call
  // Key + body bytes of those changes, as read from the source.
  uint64_t applied_bytes = 0;
  // Where the call's time went (diagnostics: a fence's drain is this call).
  int64_t read_micros = 0;   // in ReadChanges calls to the source
  int64_t apply_micros = 0;  // in applying their changes here
};

// Destination -> source: the writes to the bucket after a sequence.
struct ReadChangesRequest {
  MoveId move{};
  BucketId bucket{};
  uint64_t after_sequence = 0;
  uint32_t max_changes = 1000;
};
struct ReadChangesResponse {
  std::vector<storage::Document> changes{};
  uint64_t next_sequence = 0;
};

// Destination of a switch-then-copy move in kCopy: pull up to `max_pages` pages of the source's
// documents (tombstones included) from `cursor` on and apply each unless the destination holds
// a newer version. next_cursor "" = the bucket is transferred.
struct TransferBucketRequest {
  MoveId move{};
  BucketId bucket{};
  NodeId source{};
  std::string cursor{};
  uint32_t max_pages = 16;
};
struct TransferBucketResponse {
  std::string next_cursor{};
  uint64_t documents = 0;  // applied or skipped by this call
  uint64_t bytes = 0;
};

// Source: stop acknowledging reads and writes of the bucket (queue them) and report the last
// sequence that holds a write to it.
struct FenceRequest {
  MoveId move{};
  BucketId bucket{};
};
// The replicated primary of `buckets` at map `epoch`: queue the buckets' writes until a map
// newer than `epoch` arrives or the coordinator releases the quiesce `token` names, and answer
// once every write admitted before is on every replica (docs/design/replication.md §7, splits
// and merges). With `release`: lift that quiesce (the split or merge will not commit). Ack.
struct QuiesceRequest {
  MapEpoch epoch{};
  std::vector<BucketId> buckets{};
  uint64_t token = 0;  // unique per attempt
  bool release = false;
};
struct FenceResponse {
  uint64_t sequence = 0;
  // A replicated primary's state of the bucket at the fence (position and term history).
  std::optional<storage::ReplicaState> replica = {};
};

// What a DropBucket cleans up; the node decides by it what it may keep (StorageNode::HandleDrop).
enum class DropReason : uint8_t {
  // The copy a committed move replaced (its source, or a replaced backup), or a stale held copy
  // (no move): the range's data goes.
  kLeavingCopy = 0,
  // An aborted move's destination: only what the move staged goes; a copy that still vouches for
  // its data (a stored replica state, which every staging clears first) stays.
  kAbortedStaging = 1,
};
[[nodiscard]] std::string_view ToString(DropReason reason);

// Source after DONE, or destination after an abort: delete the bucket's local data (idempotent).
// Refused while the node's map (at least `epoch`) shows the node serving or receiving the range.
struct DropBucketRequest {
  MapEpoch epoch{};
  MoveId move{};
  BucketId bucket{};
  storage::PointRange range{};
  DropReason reason = DropReason::kLeavingCopy;
};

// Approximate per-bucket sizes, for the balancer and split/merge.
struct BucketLoadRequest {};
struct BucketLoad {
  BucketId bucket{};
  uint64_t bytes = 0;
  uint64_t documents = 0;
  // The reads and the writes the node served of the bucket, decayed rates (node::RequestRates);
  // the balancer places primaries by the requests they carry (docs/design/replication.md §7).
  double reads_per_second = 0;
  double writes_per_second = 0;
};
// One of the keys a node acknowledged the most writes to lately, by its hot-key sketch
// (docs/design/hotspot.md): the true decayed rate lies in
// [writes_per_second - error_per_second, writes_per_second].
struct HotKeyStat {
  CollectionId collection{};
  std::string primary_key{};
  double writes_per_second = 0;
  double error_per_second = 0;
};
// Free space on the disk of a node's data directory, and the reserve below which it refuses
// writes (storage::DiskSpaceGuard); the balancer gives a node only what fits above the reserve.
struct DiskSpaceReport {
  uint64_t free_bytes = 0;
  uint64_t reserve_bytes = 0;
};
// A copy of a replicated bucket that the node holds but its map does not list it for (a backup
// removed while it was down, an aborted ingest's data): the bucket's range in the node's map and
// the copy's position (0: none, it cannot resume). A repair prefers a node whose copy has one;
// once the bucket is whole the coordinator drops it (docs/design/replication.md §6.1).
struct HeldCopy {
  BucketId bucket{};
  storage::PointRange range{};
  storage::ReplicaPosition position{};
};
// At most this many HeldCopy per report (the first in the node's map order).
inline constexpr size_t kMaxHeldCopies = 256;
struct BucketLoadResponse {
  std::vector<BucketLoad> buckets{};
  std::vector<HotKeyStat> hot_keys{};     // hottest first
  std::optional<DiskSpaceReport> disk{};  // none when the node could not read it
  std::vector<HeldCopy> held{};           // at most kMaxHeldCopies
};

// ---- replication (docs/design/replication.md §3): primary -> backup ----

// One message of the ordered stream from a bucket primary to one backup: the writes of every
// bucket the two share, in rseq order per bucket. The backup applies a bucket's entries only if
// its own map names `primary` that bucket's primary at the entries' term.
// Entries may carry older terms than their bucket's term in `terms` (the new primary of a
// failover resends the old term's tail); `terms` names the term the primary sends under, for
// every bucket of the message, and a keepalive is a message with `terms` and no entries. The
// backup answers every bucket of `terms`.
struct ReplicateRequest {
  NodeId primary{};
  MapEpoch epoch{};  // the primary's map
  std::vector<storage::ReplicatedEntry> entries{};
  std::vector<BucketTerm> terms{};
};
// Per bucket of the request: the position the backup holds durably after it, or why it refused
// the bucket's entries (kStaleTerm; kOutOfRange for a gap; kAborted for a divergent copy).
struct ReplicaAck {
  BucketId bucket{};
  Status status{};
  storage::ReplicaPosition position{};
};
struct ReplicateResponse {
  std::vector<ReplicaAck> acks{};
};

// Primary -> coordinator: `backup` has not acknowledged the bucket's stream for T_ack, or
// answered a gap or a divergent copy (docs/design/replication.md §4.1, §4.3). Answered Ack once a
// map without the backup is committed; kStaleTerm when the sender is not the bucket's primary at
// `term`; kNotEnoughReplicas when removing it would undercut min_in_sync.
struct ReplicaReportRequest {
  NodeId primary{};
  BucketId bucket{};
  Term term{};
  NodeId backup{};
  std::string reason{};
  // The backup answered but cannot catch up (a gap the primary cannot fill, a divergent copy):
  // it leaves even below min_in_sync (DropReplica), where a silent one stays listed.
  bool broken = false;
};

// Coordinator -> replica: from now on refuse the buckets' streams at their term or older (and so
// stop renewing that primary's read lease), and report what is held (§4.2 step 2).
struct SealTermRequest {
  std::vector<BucketTerm> buckets{};
};
struct SealedBucket {
  BucketId bucket{};
  storage::ReplicaPosition position{};
  // Microseconds since this replica last acknowledged the sealed primary's stream for the
  // bucket, on its own clock; UINT64_MAX when it never did since it started.
  uint64_t micros_since_ack = UINT64_MAX;
};
struct SealTermResponse {
  uint64_t store_id = 0;
  std::vector<SealedBucket> buckets{};
};

struct Ack {};

using Request =
    std::variant<WriteRequest, GetRequest, ScanRequest, GetMapRequest, InstallMapRequest,
                 HeartbeatRequest, CreateCollectionRequest, ExportBucketRequest,
                 IngestBucketRequest, CatchUpRequest, ReadChangesRequest, FenceRequest,
                 DropBucketRequest, BucketLoadRequest, TransferBucketRequest, FetchMoveFileRequest,
                 BatchWriteRequest, BatchGetRequest, ReplicateRequest, ReplicaReportRequest,
                 SealTermRequest, QuiesceRequest, ResumeCopyRequest, RetainedLogRequest>;

using ResponseBody =
    std::variant<Ack, WriteResponse, GetResponse, ScanResponse, GetMapResponse, HeartbeatResponse,
                 CreateCollectionResponse, ExportBucketResponse, CatchUpResponse,
                 ReadChangesResponse, FenceResponse, BucketLoadResponse, TransferBucketResponse,
                 FetchMoveFileResponse, BatchWriteResponse, BatchGetResponse, ReplicateResponse,
                 SealTermResponse, ResumeCopyResponse>;

struct Response {
  Status status{};
  ResponseBody body{};
  cluster::ShardMapPtr route{};  // with kWrongShard: the answering node's map

  [[nodiscard]] static Response Ok(ResponseBody body = Ack{}) {
    return Response{OkStatus(), std::move(body), nullptr};
  }
  [[nodiscard]] static Response Error(Status status, cluster::ShardMapPtr route = nullptr) {
    return Response{std::move(status), Ack{}, std::move(route)};
  }
};

[[nodiscard]] std::string_view RequestName(const Request& request);

// The body of a successful response as T, or InternalError if it holds another type.
template <typename T>
[[nodiscard]] StatusOr<T> BodyAs(Response response) {
  if (!response.status.ok()) return response.status;
  if (auto* body = std::get_if<T>(&response.body)) return std::move(*body);
  return InternalError("response body of an unexpected type");
}

}  // namespace shoal::transport
