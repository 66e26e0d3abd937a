#pragma once

// A storage node's settings (NodeOptions) and the counters it keeps of its work (NodeCounters);
// StorageNode (storage_node.h) is their user.

#include <cstdint>
#include <string>

#include "src/common/ids.h"
#include "src/hotspot/top_k_sketch.h"
#include "src/storage/bucket_store.h"
#include "src/transport/runtime.h"

namespace shoal::node {

// How the destination of a move gets the source's exported files (move_files.h).
enum class MoveFileTransfer : uint8_t {
  // Reads them by path when the runtime's nodes share one filesystem
  // (Runtime::SharesFilesystem: the embedded and simulated clusters) and every file is there;
  // copies them from the source otherwise (always over a network).
  kAuto,
  // Always copies them from the source, chunk by chunk (FetchMoveFile).
  kFetch,
};

// The largest NodeOptions::background_nice: the top of the Linux nice range.
inline constexpr int kMaxBackgroundNice = 19;

struct NodeOptions {
  NodeId id;
  std::string data_dir;  // the BucketStore lives in data_dir/store, move files in data_dir/moves
  storage::StoreOptions store;  // path is set from data_dir
  transport::Micros call_timeout = 2'000'000;
  transport::Micros fence_timeout = 2'000'000;  // queued requests give up after this
  transport::Micros heartbeat_interval = 200'000;
  transport::Micros queue_poll = 500;  // re-check of a queued request
  uint32_t max_scan_documents = 1000;
  // Bucket sizes for the balancer by an exact scan (the default) instead of engine estimates.
  // The estimates count memtable data at several times its size and depend on background
  // flushes, which made the balancer move buckets back and forth (and would break replay in
  // the simulation). An exact scan of every bucket would cost a read of the node's data per
  // balancer round: see load_stats_max_age.
  bool exact_load_stats = true;
  // Exact sizes are cached per bucket; a bucket of a new id or range is always scanned, except a
  // bucket moved in by export and ingest, whose size comes with the export. A cached
  // size is scanned again once the writes to its range since changed an eighth of its live
  // bytes (so that a growing bucket splits in time), or a 64th once it is older than this
  // (storage::BucketStore::LiveBytesChurn: inserts, deletes and size changes count, overwrites
  // of the same size do not, so a steady update load rescans nothing). One report rescans at
  // most an eighth of the served buckets (the oldest first), so that no report reads all the
  // node's data. 0: every report scans every bucket. Only the runtime's clock and the store's
  // own counters decide: the simulation replays.
  transport::Micros load_stats_max_age = 5'000'000;
  // The per-key write-rate sketch whose hottest keys the load report carries.
  hotspot::TopKSketchOptions hot_keys{};
  MoveFileTransfer move_file_transfer = MoveFileTransfer::kAuto;
  // Bytes per FetchMoveFile request, in [1, transport::kMaxMoveFileChunkBytes], and attempts per
  // chunk on a transient error (kUnavailable, kDeadlineExceeded), at least 1. Checked by Open.
  uint32_t move_chunk_bytes = 1u << 20;
  int move_chunk_attempts = 4;
  // MOVE CPU: the data work of a move (export, ingest, the catch-up rounds before the fence) runs
  // this many nice steps below the node's request handling (Runtime::RunAtLowerPriority), so
  // that on a busy machine the clients get the cores first. In [0, kMaxBackgroundNice]; 0 turns
  // it off. Only the thread runtimes on Linux act on it; the simulation runs the work inline.
  int background_nice = 4;
  // Replication (docs/design/replication.md §4, §5). READ LEASE: a replicated primary answers
  // reads only until read_lease - clock_drift after the send time of the latest stream message
  // every backup acknowledged; the sender keeps the lease alive with a keepalive every
  // read_lease / 4. A backup that acknowledged nothing for replica_ack_timeout is reported to the
  // coordinator, which removes it from the bucket (above min_in_sync) so that writes go on.
  transport::Micros read_lease = 1'000'000;
  // A backup answers a kAnyReplica read only while its primary's latest message is at most this
  // old (docs/design/replication.md §5: the staleness bound of such reads).
  transport::Micros max_staleness = 1'000'000;
  transport::Micros clock_drift = 100'000;
  transport::Micros replica_ack_timeout = 1'000'000;
};

struct NodeCounters {
  uint64_t writes = 0;
  uint64_t reads = 0;
  uint64_t wrong_shard = 0;
  uint64_t queued = 0;
  uint64_t fence_timeouts = 0;
  uint64_t changes_applied = 0;
  uint64_t bytes_ingested = 0;
  // Export files a destination copied from a source (FetchMoveFile), their bytes and the chunk
  // requests retried; and the files it read by path instead (MoveFileTransfer::kAuto).
  uint64_t move_files_fetched = 0;
  uint64_t move_bytes_fetched = 0;
  uint64_t move_chunk_retries = 0;
  uint64_t move_files_read_locally = 0;
  // Of those, the files ingested through hard links (no copy of their data).
  uint64_t move_files_linked = 0;
  // Buckets scanned to size them for a load report (NodeOptions::load_stats_max_age).
  uint64_t load_scans = 0;
  // Batch writes applied in one store call, and those applied write by write (a bucket of the
  // batch was not served here at once: storage_node_batch.cc).
  uint64_t batches_at_once = 0;
  uint64_t batches_one_by_one = 0;
  // Copies of replicated buckets this node resumed from their primary's log, with no snapshot
  // (storage_node_resume.cc).
  uint64_t copies_resumed = 0;
  // Reports of a backup to the coordinator (ReplicaReportRequest), silent or broken.
  uint64_t backup_reports = 0;
};

}  // namespace shoal::node
