#pragma once

// The mutation that stores a document read from another copy unless this copy holds it at the
// same or a newer version (kApplyIfNewer): one home for that conversion, used by catch-up
// (BucketStore::ApplyChanges) and replication (ApplyReplicated). The views point into `d`.

#include "src/storage/document.h"
#include "src/storage/mutation.h"

namespace shoal::storage {

[[nodiscard]] inline Mutation ApplyIfNewerOf(const Document& d) {
  return Mutation{.kind = MutationKind::kApplyIfNewer,
                  .collection = d.collection,
                  .primary_key = d.primary_key,
                  .body = d.body,
                  .tombstone = d.tombstone,
                  .version = d.version};
}

}  // namespace shoal::storage
