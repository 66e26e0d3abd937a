#pragma once

// The storage mutation a client's write request asks for (one home for the mapping of
// transport::WriteOp onto storage::MutationKind). The views point into `write`.

#include "src/storage/mutation.h"
#include "src/transport/messages.h"

namespace shoal::node {

[[nodiscard]] inline storage::Mutation MutationOf(const transport::WriteRequest& write) {
  storage::Mutation m{
      .collection = write.collection, .primary_key = write.primary_key, .body = write.body};
  switch (write.op) {
    case transport::WriteOp::kInsert:
      m.kind = storage::MutationKind::kInsert;
      break;
    case transport::WriteOp::kUpdate:
      m.kind = storage::MutationKind::kUpdate;
      break;
    case transport::WriteOp::kUpsert:
      m.kind = storage::MutationKind::kUpsert;
      break;
    case transport::WriteOp::kDelete:
      m.kind = storage::MutationKind::kDelete;
      break;
    case transport::WriteOp::kCompareAndSet:
      m.kind = storage::MutationKind::kCompareAndSet;
      m.version = write.expected_version;
      break;
  }
  return m;
}

}  // namespace shoal::node
