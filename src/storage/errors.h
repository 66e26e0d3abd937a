#pragma once

// Why a storage operation failed: the one reason enum of src/storage, and its mapping onto
// shoal::Status codes. The reason travels with the Status as a payload, so a caller can branch
// on it (ReasonOf) while generic code only sees the code:
//
//   reason              code                 meaning
//   kDuplicate          kAlreadyExists       a live document exists (Insert); a stored document
//                                            fails the parameterized upsert's predicate (000 §5)
//   kNotFound           kNotFound            no live document (Get, Update, Delete, CompareAndSet)
//   kConditionFailed    kFailedPrecondition  the stored document fails the (version, tombstone)
//                                            predicate of a conditional operation or of CAS
//   kUnknownCollection  kNotFound            the collection is not registered
//   kCollectionExists   kAlreadyExists       the id or the name is taken by another collection
//   kInvalidDocument    kInvalidArgument     malformed JSON, body not an object, nesting too
//                                            deep, empty primary key
//   kTooLarge           kResourceExhausted   primary key, body or batch above its limit
//   kInvalidArgument    kInvalidArgument     a bad range, cursor, option or file list
//   kBucketState        kFailedPrecondition  the local directory forbids it (range served,
//                                            overlapping buckets, wrong state)
//   kCorruption         kDataLoss            stored or shipped bytes do not decode
//   kUnavailable        kUnavailable         a retryable engine condition (busy, try again,
//                                            the WAL needed for catch-up is gone)
//   kIo                 kInternal            any other engine error (I/O, a refused write)
//   kNoSpace            kResourceExhausted   the write would leave less free disk than the
//                                            store's reserve (DiskSpaceGuard); retry once space
//                                            is freed
//
// A failing operation changes nothing: every check happens before the one engine write.

#include <cstdint>
#include <optional>
#include <string_view>

#include "src/common/status.h"

namespace rocksdb {
class Status;
}  // namespace rocksdb

namespace shoal::storage {

enum class ErrorReason : uint8_t {
  kDuplicate,
  kNotFound,
  kConditionFailed,
  kUnknownCollection,
  kCollectionExists,
  kInvalidDocument,
  kTooLarge,
  kInvalidArgument,
  kBucketState,
  kCorruption,
  kUnavailable,
  kIo,
  kNoSpace,
};

// The last ErrorReason, for range checks of decoded values.
inline constexpr ErrorReason kLastErrorReason = ErrorReason::kNoSpace;

[[nodiscard]] std::string_view ErrorReasonName(ErrorReason reason);
[[nodiscard]] StatusCode CodeOf(ErrorReason reason);

// A Status with CodeOf(reason), `message`, and `reason` as its payload.
[[nodiscard]] Status StorageError(ErrorReason reason, std::string_view message);

// The reason attached by StorageError, if any.
[[nodiscard]] std::optional<ErrorReason> ReasonOf(const Status& status);

// True iff `status` carries `reason`.
[[nodiscard]] inline bool Is(const Status& status, ErrorReason reason) {
  return ReasonOf(status) == reason;
}

template <typename T>
[[nodiscard]] bool Is(const StatusOr<T>& status_or, ErrorReason reason) {
  return Is(status_or.status(), reason);
}

// Maps an engine status: OK -> OK, Corruption -> kCorruption, Busy/TryAgain/Incomplete ->
// kUnavailable, anything else -> kIo. `context` is prepended to the message.
[[nodiscard]] Status FromRocks(const rocksdb::Status& status, std::string_view context);

}  // namespace shoal::storage
