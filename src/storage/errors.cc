#include "src/storage/errors.h"

#include <fmt/format.h>

#include <string>

namespace shoal::storage {
namespace {

constexpr std::string_view kPayloadUrl = "shoal.storage/ErrorReason";

}  // namespace

std::string_view ErrorReasonName(ErrorReason reason) {
  switch (reason) {
    case ErrorReason::kDuplicate:
      return "DUPLICATE";
    case ErrorReason::kNotFound:
      return "NOT_FOUND";
    case ErrorReason::kConditionFailed:
      return "CONDITION_FAILED";
    case ErrorReason::kUnknownCollection:
      return "UNKNOWN_COLLECTION";
    case ErrorReason::kCollectionExists:
      return "COLLECTION_EXISTS";
    case ErrorReason::kInvalidDocument:
      return "INVALID_DOCUMENT";
    case ErrorReason::kTooLarge:
      return "TOO_LARGE";
    case ErrorReason::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorReason::kBucketState:
      return "BUCKET_STATE";
    case ErrorReason::kCorruption:
      return "CORRUPTION";
    case ErrorReason::kUnavailable:
      return "UNAVAILABLE";
    case ErrorReason::kIo:
      return "IO";
    case ErrorReason::kNoSpace:
      return "NO_SPACE";
  }
  return "UNKNOWN";
}

StatusCode CodeOf(ErrorReason reason) {
  switch (reason) {
    case ErrorReason::kDuplicate:
    case ErrorReason::kCollectionExists:
      return StatusCode::kAlreadyExists;
    case ErrorReason::kNotFound:
    case ErrorReason::kUnknownCollection:
      return StatusCode::kNotFound;
    case ErrorReason::kConditionFailed:
    case ErrorReason::kBucketState:
      return StatusCode::kFailedPrecondition;
    case ErrorReason::kInvalidDocument:
    case ErrorReason::kInvalidArgument:
      return StatusCode::kInvalidArgument;
    case ErrorReason::kTooLarge:
    case ErrorReason::kNoSpace:
      return StatusCode::kResourceExhausted;
    case ErrorReason::kCorruption:
      return StatusCode::kDataLoss;
    case ErrorReason::kUnavailable:
      return StatusCode::kUnavailable;
    case ErrorReason::kIo:
      return StatusCode::kInternal;
  }
  return StatusCode::kUnknown;
}

Status StorageError(ErrorReason reason, std::string_view message) {
  Status status = MakeStatus(CodeOf(reason), message);
  const char tag = static_cast<char>(reason);
  status.SetPayload(kPayloadUrl, std::string_view(&tag, 1));
  return status;
}

std::optional<ErrorReason> ReasonOf(const Status& status) {
  auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value() || payload->size() != 1) return std::nullopt;
  const auto value = static_cast<uint8_t>((*payload)[0]);
  if (value > static_cast<uint8_t>(kLastErrorReason)) return std::nullopt;
  return static_cast<ErrorReason>(value);
}

}  // namespace shoal::storage
