#include "src/transport/messages.h"

#include <fmt/format.h>

#include "src/common/overloaded.h"

namespace shoal::transport {
namespace {

constexpr std::string_view kPayloadUrl = "shoal.cluster/ClusterError";

StatusCode CodeOf(ClusterError error) {
  switch (error) {
    case ClusterError::kWrongShard:
    case ClusterError::kStaleMove:
    case ClusterError::kStaleTerm:
      return StatusCode::kFailedPrecondition;
    case ClusterError::kNotServing:
    case ClusterError::kNotEnoughReplicas:
      return StatusCode::kUnavailable;
  }
  return StatusCode::kUnknown;
}

}  // namespace

std::string Address::DebugString() const {
  switch (kind) {
    case Kind::kCoordinator:
      return "coordinator";
    case Kind::kNode:
      return fmt::format("n{}", id);
    case Kind::kClient:
      return fmt::format("client{}", id);
  }
  return "?";
}

Status MakeClusterError(ClusterError error, std::string_view message) {
  Status status = MakeStatus(CodeOf(error), message);
  const char tag = static_cast<char>(error);
  status.SetPayload(kPayloadUrl, std::string_view(&tag, 1));
  return status;
}

std::optional<ClusterError> ClusterErrorOf(const Status& status) {
  auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value() || payload->size() != 1) return std::nullopt;
  const auto value = static_cast<uint8_t>((*payload)[0]);
  if (value < 1 || value > static_cast<uint8_t>(ClusterError::kStaleTerm)) return std::nullopt;
  return static_cast<ClusterError>(value);
}

std::string_view ToString(WriteOp op) {
  switch (op) {
    case WriteOp::kInsert:
      return "insert";
    case WriteOp::kUpdate:
      return "update";
    case WriteOp::kUpsert:
      return "upsert";
    case WriteOp::kDelete:
      return "delete";
    case WriteOp::kCompareAndSet:
      return "compare-and-set";
  }
  return "?";
}

Status ValidateBatch(const std::vector<WriteRequest>& writes) {
  if (writes.empty()) return InvalidArgumentError("a batch needs at least one write");
  if (writes.size() > kMaxBatchWrites) {
    return ResourceExhaustedError(fmt::format(
        "a batch of {} writes; the limit is {} (docs/limits.md)", writes.size(), kMaxBatchWrites));
  }
  size_t bytes = 0;
  for (const WriteRequest& write : writes) {
    if (write.via_move.has_value()) {
      return InvalidArgumentError("a batched write may not be forwarded (via_move)");
    }
    bytes += write.primary_key.size() + write.body.size();
  }
  if (bytes > kMaxBatchBytes) {
    return ResourceExhaustedError(
        fmt::format("a batch of {} bytes of keys and bodies; the limit is {} (docs/limits.md)",
                    bytes, kMaxBatchBytes));
  }
  return OkStatus();
}

Status ValidateBatchGet(const std::vector<GetRequest>& gets) {
  if (gets.empty()) return InvalidArgumentError("a batch get needs at least one key");
  if (gets.size() > kMaxBatchGets) {
    return ResourceExhaustedError(fmt::format(
        "a batch of {} gets; the limit is {} (docs/limits.md)", gets.size(), kMaxBatchGets));
  }
  for (const GetRequest& get : gets) {
    if (get.via_move.has_value() || get.include_tombstones) {
      return InvalidArgumentError("a batched get may not be forwarded (via_move, tombstones)");
    }
  }
  return OkStatus();
}

Status ValidateScan(const ScanRequest& scan) {
  if (scan.max_documents == 0) {
    return InvalidArgumentError("a scan asks for at least 1 document per page, not 0");
  }
  return OkStatus();
}

std::string_view ToString(DropReason reason) {
  switch (reason) {
    case DropReason::kLeavingCopy:
      return "leaving-copy";
    case DropReason::kAbortedStaging:
      return "aborted-staging";
  }
  return "?";
}

std::string_view RequestName(const Request& request) {
  return std::visit(
      Overloaded{
          [](const WriteRequest&) { return std::string_view("Write"); },
          [](const GetRequest&) { return std::string_view("Get"); },
          [](const ScanRequest&) { return std::string_view("Scan"); },
          [](const GetMapRequest&) { return std::string_view("GetMap"); },
          [](const InstallMapRequest&) { return std::string_view("InstallMap"); },
          [](const HeartbeatRequest&) { return std::string_view("Heartbeat"); },
          [](const CreateCollectionRequest&) { return std::string_view("CreateCollection"); },
          [](const ExportBucketRequest&) { return std::string_view("ExportBucket"); },
          [](const IngestBucketRequest&) { return std::string_view("IngestBucket"); },
          [](const CatchUpRequest&) { return std::string_view("CatchUp"); },
          [](const ReadChangesRequest&) { return std::string_view("ReadChanges"); },
          [](const FenceRequest&) { return std::string_view("Fence"); },
          [](const DropBucketRequest&) { return std::string_view("DropBucket"); },
          [](const BucketLoadRequest&) { return std::string_view("BucketLoad"); },
          [](const TransferBucketRequest&) { return std::string_view("TransferBucket"); },
          [](const FetchMoveFileRequest&) { return std::string_view("FetchMoveFile"); },
          [](const BatchWriteRequest&) { return std::string_view("BatchWrite"); },
          [](const BatchGetRequest&) { return std::string_view("BatchGet"); },
          [](const ReplicateRequest&) { return std::string_view("Replicate"); },
          [](const ReplicaReportRequest&) { return std::string_view("ReplicaReport"); },
          [](const SealTermRequest&) { return std::string_view("SealTerm"); },
          [](const QuiesceRequest&) { return std::string_view("Quiesce"); },
          [](const ResumeCopyRequest&) { return std::string_view("ResumeCopy"); },
          [](const RetainedLogRequest&) { return std::string_view("RetainedLog"); },
      },
      request);
}

Status OtherClusterError(uint64_t directory_cluster, uint64_t offered_cluster) {
  return FailedPreconditionError(fmt::format(
      "the node's data directory belongs to cluster {:016x}, not to cluster {:016x}: the node "
      "was pointed at another cluster's coordinator, or the coordinator's metadata was lost and "
      "made anew. Point it at its own cluster; a node of a new cluster needs an empty data "
      "directory",
      directory_cluster, offered_cluster));
}

}  // namespace shoal::transport
