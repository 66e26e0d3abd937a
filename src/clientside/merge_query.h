#pragma once

// MergeQuery: a query over several shards, merged by primary key (paper 000 Algorithm 6).
//
// Each shard is read in primary-key order through its own resumable cursor, a page at a time;
// the heads of the shard streams are merged: the smallest key wins, among the copies of that key
// the one of the highest version is kept (I5), a tombstone hides the key, and every copy of the
// key is dropped from the heads. In `consistent` mode (rebalancing) the shards return the
// documents that match the filter plus every new-version document and tombstone, the ones that
// do not match as shadow rows (ShardQuery::or_version: key and version, no body), so an old copy
// that still matches cannot stand in for a newer one that does not: the shadow row wins the
// key and, like a tombstone, hides it. Since every live document a shard returns matches the
// filter, the winner needs no second evaluation. In naïve mode the filter is simply pushed down.
//
// Guarantees (§3): a document present and never deleted during the query is returned; no key is
// returned twice. Not thread-safe: one caller at a time.

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/clientside/shard_backend.h"

namespace shoal::clientside {

struct MergeQueryOptions {
  storage::DocumentFilter filter{};
  bool consistent = false;   // Algorithm 6 over old and new copies (rebalancing)
  MapVersion new_version{};  // consistent mode: v_new
  size_t page_size = 256;    // per shard request
};

class MergeQuery {
 public:
  // `shards` must outlive the query.
  MergeQuery(std::vector<ShardBackend*> shards, MergeQueryOptions options);
  ~MergeQuery();
  MergeQuery(const MergeQuery&) = delete;
  MergeQuery& operator=(const MergeQuery&) = delete;

  // Up to `max` next documents; an empty result means the query is exhausted.
  [[nodiscard]] StatusOr<std::vector<ShardDocument>> Next(size_t max);
  [[nodiscard]] bool done() const { return done_; }

 private:
  struct Stream {
    ShardBackend* shard = nullptr;
    std::deque<ShardDocument> buffer{};
    std::optional<std::string> last_key{};
    bool exhausted = false;
  };
  [[nodiscard]] Status Fill(Stream& s);

  std::vector<Stream> streams_;
  MergeQueryOptions options_;
  bool done_ = false;
};

}  // namespace shoal::clientside
