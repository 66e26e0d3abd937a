// BucketStore: the engine stops and resumes in place (docs/design/storage.md, "A full disk").
//
// When the disk refuses a write the guard let through (a WAL append or sync, a flush, a
// MANIFEST record), RocksDB keeps the error as its background error and fails every later
// write with it. The store notes the stop when a write or a WAL sync fails with an I/O error
// and, before the next write, once the disk has its reserve free again, calls DB::Resume: the
// engine flushes every memtable to new tables, starts a new WAL file, and takes writes again.
// No restart, and nothing acknowledged is lost: a write the engine failed was never applied to
// the memtable, and everything applied before the stop is flushed by the resume.
//
// Invariants:
//   - while stopped, every write fails and changes nothing (kNoSpace if the disk refused the
//     write that stopped the engine, kIo for another I/O error); reads go on;
//   - a resume is attempted only with the reserve free by a fresh reading (a flush needs room;
//     a resume tried on a full disk leaves the engine's own recovery busy for about 5 s after
//     space is back, or, if the disk refuses its new WAL file, stops the engine for good), at
//     most every 100 ms, by one writer at a time;
//   - after a resume, WAL reads that start at or below the last sequence before it are refused
//     with kUnavailable: the WAL file the engine stopped on may hold a record of a write that
//     failed (appended, then its sync refused), whose sequence numbers later writes reuse. A
//     catch-up reading across the stop restarts from a fresh export, as after a WAL deletion;
//     a marker record written by the resume puts every later snapshot above the refused range.

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "src/common/steady_clock.h"
#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"
#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

// How long one resume attempt waits for the engine's own recovery (the flush it starts) while
// DB::Resume answers Busy, and how often it asks again.
constexpr auto kResumeWait = std::chrono::milliseconds(100);
constexpr auto kResumePoll = std::chrono::milliseconds(10);
// Resume attempts that found room are at least this far apart.
constexpr int64_t kResumeRetryNanos = 100'000'000;

// Meta key of the resume marker (how many times the engine resumed); LoadMeta ignores it.
constexpr std::string_view kResumeMarkerKey = "R";

}  // namespace

Status BucketStore::EngineWriteStatus(const rocksdb::Status& status, std::string_view context) {
  if (status.ok()) return OkStatus();
  if (!status.IsIOError()) return FromRocks(status, context);
  if (!engine_stopped_.exchange(true, std::memory_order_acq_rel)) {
    engine_stops_.fetch_add(1, std::memory_order_relaxed);
    stopped_by_full_disk_.store(status.IsNoSpace(), std::memory_order_relaxed);
  }
  if (status.IsNoSpace()) {
    return StorageError(
        ErrorReason::kNoSpace,
        fmt::format("{}: the disk under {} refused a write ({}); writes resume "
                    "once {} bytes are free (min_free_disk_bytes)",
                    context, options_.path, status.ToString(), options_.min_free_disk_bytes));
  }
  Status failed = FromRocks(status, context);
  NoteFailure(StorageError(ErrorReason::kIo, fmt::format("the disk under {} failed a write: {}",
                                                         options_.path, MessageOf(failed))));
  return failed;
}

void BucketStore::NoteFailure(const Status& failure) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (!failure_.has_value()) failure_ = failure;
}

std::optional<Status> BucketStore::EngineFailure() const {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return failure_;
}

Status BucketStore::ResumeEngineIfStopped() {
  if (!engine_stopped_.load(std::memory_order_acquire)) return OkStatus();
  const auto stopped = [this](std::string_view why) {
    return StorageError(stopped_by_full_disk_.load(std::memory_order_relaxed)
                            ? ErrorReason::kNoSpace
                            : ErrorReason::kIo,
                        fmt::format("the engine under {} stopped after a failed write and has "
                                    "not resumed yet: {}",
                                    options_.path, why));
  };
  std::unique_lock<std::mutex> lock(resume_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return stopped("another write is resuming it");
  if (!engine_stopped_.load(std::memory_order_acquire)) return OkStatus();
  const int64_t now = SteadyNanos();
  if (last_resume_attempt_ns_ != 0 && now - last_resume_attempt_ns_ < kResumeRetryNanos) {
    return stopped("the last attempt was too recent");
  }
  if (space_->reserve_bytes() > 0) {
    // A fresh reading, whatever the guard's interval. One that fails lets the attempt go on:
    // the engine's flush reports a full disk itself.
    StatusOr<uint64_t> free = space_->ReadFreeBytes();
    if (free.ok() && *free < space_->reserve_bytes()) {
      return stopped(fmt::format("{} bytes free, fewer than the reserve of {}", *free,
                                 space_->reserve_bytes()));
    }
  }
  last_resume_attempt_ns_ = now;
  rocksdb::Status resumed = db_->Resume();
  const auto deadline = std::chrono::steady_clock::now() + kResumeWait;
  while (resumed.IsBusy() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kResumePoll);
    resumed = db_->Resume();
  }
  if (!resumed.ok()) {
    // The disk filled again while the engine resumed (its new WAL file or its flush refused),
    // or a WAL sync raced the refused write: RocksDB 7.8 then marks the error unrecoverable,
    // and only reopening the store clears it (docs/design/storage.md §10).
    if (resumed.severity() >= rocksdb::Status::Severity::kFatalError) {
      Status fatal = stopped(
          fmt::format("{}; it cannot resume in place, restart the node", resumed.ToString()));
      NoteFailure(fatal);
      return fatal;
    }
    return stopped(resumed.ToString());
  }
  // Stored before the flag clears: no write resumes before WAL reads across the stop are
  // refused. A write that slipped in before this reading only makes the refusal wider.
  wal_readable_from_.store(db_->GetLatestSequenceNumber() + 1, std::memory_order_release);
  // A marker record opens the new WAL file, so that every snapshot taken from now on (a fresh
  // export) lies above the refused range and its catch-up is not refused.
  std::string count;
  AppendBigEndian64(engine_resumes_.load(std::memory_order_relaxed) + 1, &count);
  SHOAL_RETURN_IF_ERROR(EngineWriteStatus(
      db_->Put(engine_.write, meta_,
               rocksdb::Slice(kResumeMarkerKey.data(), kResumeMarkerKey.size()), count),
      "write resume marker"));
  engine_resumes_.fetch_add(1, std::memory_order_relaxed);
  engine_stopped_.store(false, std::memory_order_release);
  return OkStatus();
}

Status BucketStore::CheckWalReadableAfter(uint64_t after_sequence) const {
  const uint64_t readable_from = wal_readable_from_.load(std::memory_order_acquire);
  if (after_sequence >= readable_from) return OkStatus();
  return StorageError(ErrorReason::kUnavailable,
                      fmt::format("WAL from sequence {} crosses an engine stop (resumed at {}); "
                                  "restart from a fresh export",
                                  after_sequence + 1, readable_from - 1));
}

}  // namespace shoal::storage
