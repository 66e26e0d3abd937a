#pragma once

// Batch slots: how single-key requests to one node travel as one batch call and come back as
// the responses each would have had alone. Shared by the Coalescer (threads that wait) and the
// Pipeline (callbacks), docs/design/network.md "Coalescing".
//
// Invariants:
//   - only a WriteRequest or GetRequest without via_move (and, for a get, without
//     include_tombstones) is batchable: anything else goes alone;
//   - a batch is sent at the largest epoch of its requests, and a slot's answer is exactly what
//     a single call would have returned: WRONG_SHARD slots carry the batch's route, a refusal of
//     the whole batch is each slot's refusal, a transport error is each slot's error;
//   - a write batch whose answer cannot be matched to its slots is kDeadlineExceeded in every
//     slot (which writes were applied cannot be told: as if the reply had been lost).
//
// Stateless; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "src/common/status.h"
#include "src/transport/messages.h"

namespace shoal::client {

// The batch a request can travel in.
enum class BatchKind : uint8_t { kWrite, kGet };

// nullopt when `request` must go alone.
[[nodiscard]] std::optional<BatchKind> BatchKindOf(const transport::Request& request);

// Key plus body bytes a write adds to a write batch (0 for a get).
[[nodiscard]] size_t BatchBytesOf(const transport::Request& request);

// One BatchWriteRequest or BatchGetRequest of `requests` (all of `kind`, at least two), in order.
[[nodiscard]] transport::Request MakeBatchRequest(BatchKind kind,
                                                  std::vector<transport::Request> requests);

// Each of the `slots` requests' own result of the batch call that returned `answer`.
[[nodiscard]] std::vector<StatusOr<transport::Response>> SplitBatchAnswer(
    BatchKind kind, size_t slots, StatusOr<transport::Response> answer);

}  // namespace shoal::client
