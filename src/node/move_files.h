#pragma once

// The node-to-node transfer of a bucket move's exported SST files (docs/design/cluster.md,
// "File transfer"): the source serves chunks of the files of its export (MoveExports), the
// destination copies them into its own data directory (FetchExportedFiles) before it ingests.
//
// Invariants:
//   - The source reads only files it exported itself and registered here, named by their index
//     in the export of a move it is the source of; a request never carries a path.
//   - The size of each file is taken when it is registered, its CRC-32C once, when a chunk of
//     it is first requested (a destination on the same machine hard-links the files and never
//     requests one, so the export is not read back for nothing); every chunk carries its own
//     CRC-32C and the whole file's. The destination uses a copy only when every
//     chunk matched its checksum, every chunk reported the same whole file, and the copy has the
//     file's size and checksum; otherwise it removes its staging directory and fails.
//   - A staging directory belongs to one (move, bucket) (StagingDirectory) and holds only what
//     the running fetch wrote: it is emptied before a fetch, removed after the ingest or a
//     failure, and every staging directory is removed when a node opens (after a crash).
//
// Limits: a chunk is at most transport::kMaxMoveFileChunkBytes; a larger request is refused.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/bucket_store.h"
#include "src/transport/runtime.h"

namespace shoal::node {

// The exports a source node serves, by bucket: those of one move, by snapshot sequence (a retried
// export does not invalidate one a destination may be copying). Thread-safe (its own mutex,
// which may be taken with the node's mutex held, never the other way round).
class MoveExports {
 public:
  // Serves the files of `exported` (their sizes taken now) as the export of (bucket, move) at
  // exported.sequence; exports of the bucket for other moves are forgotten.
  [[nodiscard]] Status Register(BucketId bucket, MoveId move,
                                const storage::ExportedRange& exported) ABSL_LOCKS_EXCLUDED(mu_);
  void Forget(BucketId bucket) ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps only the exports for which `live(bucket, move)` holds.
  void Retain(const std::function<bool(BucketId, MoveId)>& live) ABSL_LOCKS_EXCLUDED(mu_);
  // One chunk, read outside the mutex (the first chunk of a file also reads the whole file for
  // its checksum). The caller checked that the node is the source of the request's move in
  // flight.
  [[nodiscard]] StatusOr<transport::FetchMoveFileResponse> Read(
      const transport::FetchMoveFileRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct File {
    std::string path;
    uint64_t bytes = 0;
    std::optional<uint32_t> crc32c;  // computed by the first Read of the file
  };
  struct Export {
    MoveId move;
    uint64_t sequence = 0;
    std::vector<File> files;
  };

  // The whole file's CRC-32C, read from disk; checks that the size is the registered one.
  [[nodiscard]] static StatusOr<uint32_t> FileChecksum(const File& file);
  // The export the request names, or null.
  [[nodiscard]] Export* FindLocked(const transport::FetchMoveFileRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // All of one move.
  absl::flat_hash_map<BucketId, std::vector<Export>> exports_ ABSL_GUARDED_BY(mu_);
};

struct FetchOptions {
  uint32_t chunk_bytes = 1u << 20;  // per request, in [1, kMaxMoveFileChunkBytes]
  int attempts = 4;                 // per chunk; only kUnavailable / kDeadlineExceeded retry
  transport::Micros call_timeout = 2'000'000;
  transport::Micros retry_pause = 10'000;  // times the attempt number
};

struct FetchStats {
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint64_t retries = 0;
};

// data_dir/moves/fetch-<move>-<bucket>.
[[nodiscard]] std::string StagingDirectory(const std::string& data_dir, MoveId move,
                                           BucketId bucket);
// Removes every staging directory under data_dir/moves (at open: a crashed fetch's leftovers).
[[nodiscard]] Status RemoveStagingDirectories(const std::string& data_dir);

// Hard-links every file of `exported` (readable here by path: the source shares this machine)
// into `directory` (emptied first) and returns `exported` naming the links, which the engine may
// then move into its store instead of copying the data; the source's own names stay. Fails, with
// the directory removed, where a link cannot be made (another filesystem): the caller then
// ingests the source's files by copy.
[[nodiscard]] StatusOr<storage::ExportedRange> LinkExportedFiles(
    const storage::ExportedRange& exported, const std::string& directory);

// Copies every file of `exported` from `source`'s export of (move, bucket) into `directory`
// (emptied first) and returns `exported` naming the local copies. On failure the directory is
// removed, unless the calling process was stopped (kCancelled: it returns at once). `stats`
// counts what was transferred, also on failure.
[[nodiscard]] StatusOr<storage::ExportedRange> FetchExportedFiles(
    transport::Runtime& runtime, NodeId source, MoveId move, BucketId bucket,
    const storage::ExportedRange& exported, const std::string& directory,
    const FetchOptions& options, FetchStats* stats);

}  // namespace shoal::node
