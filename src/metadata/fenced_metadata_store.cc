#include "src/metadata/fenced_metadata_store.h"

#include <fmt/format.h>

#include <vector>

namespace shoal::metadata {
namespace {

// Commit names the failing operation by index; the fence is operation 0: say so plainly. (The
// indexes of the caller's operations are one higher than in the caller's list.)
Status Renumbered(const Status& status) {
  if (status.ok() || status.code() != StatusCode::kFailedPrecondition) return status;
  const std::string_view message = MessageOf(status);
  if (message.find("operation 0") != std::string_view::npos) {
    return FailedPreconditionError(
        fmt::format("fenced: a newer leader took over ({})", std::string(message)));
  }
  return status;
}

}  // namespace

StatusOr<uint64_t> FencedMetadataStore::Put(std::string_view key, std::string_view value,
                                            uint64_t expected_version) {
  uint64_t expected = expected_version;
  if (expected == kAnyVersion) {
    auto current = store_.Get(key);
    if (current.ok()) {
      expected = current->version;
    } else if (current.status().code() == StatusCode::kNotFound) {
      expected = kMustNotExist;
    } else {
      return current.status();
    }
  }
  const MetaOp ops[] = {fence_(), MetaOp::Put(std::string(key), std::string(value), expected)};
  SHOAL_RETURN_IF_ERROR(Renumbered(store_.Commit(ops)));
  return expected == kMustNotExist ? uint64_t{1} : expected + 1;
}

Status FencedMetadataStore::Delete(std::string_view key, uint64_t expected_version) {
  const MetaOp ops[] = {fence_(), MetaOp::Delete(std::string(key), expected_version)};
  return Renumbered(store_.Commit(ops));
}

Status FencedMetadataStore::Commit(std::span<const MetaOp> ops) {
  if (ops.size() >= kMaxCommitOps) {
    return ResourceExhaustedError(fmt::format(
        "metadata store: a fenced commit holds at most {} operations", kMaxCommitOps - 1));
  }
  std::vector<MetaOp> fenced;
  fenced.reserve(ops.size() + 1);
  fenced.push_back(fence_());
  fenced.insert(fenced.end(), ops.begin(), ops.end());
  return Renumbered(store_.Commit(fenced));
}

}  // namespace shoal::metadata
