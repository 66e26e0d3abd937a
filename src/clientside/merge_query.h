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
// Page reads. When a shard call is a round trip (ShardBackend::RemoteCalls of any shard), pages
// are read on pool threads (call_pool.h): the first Next() requests the first page of every
// shard at once, and whenever a shard's buffered rows fall to half a page or less its next page
// is requested at once and read while the merge (and the caller, between Next() calls) goes on.
// Local shards are read on the caller's thread when the merge needs a head, in shard order.
// Invariants of the concurrent reads:
//   - At most one page per shard is in flight, and it is requested with the cursor (the last key)
//     of the page received before it: every shard is read as the sequential merge reads it, page
//     for page, so a query read to its end costs the same shard calls (one abandoned early may
//     have requested one more page per shard, which it cancels or waits for).
//   - The merge takes a key only when every shard that is not exhausted has a buffered head; it
//     waits (blocking, no polling) for the pages it lacks, so the output depends only on the
//     pages' contents, never on when they arrive: it is the sequential merge's, row for row.
//   - Algorithm 6's guarantee needs only that every page is read while the query is open (its
//     key is registered before the first read, and no old copy is removed before it ends): when
//     a page is read, earlier or later, changes nothing in the argument.
//   - A shard error ends the query: the fetches not yet started are cancelled, the running ones
//     are awaited, and Next() returns that error from then on (rows already taken from the
//     buffers cannot be replayed, so the query cannot resume). The error reported is that of the
//     first failed page in the merge's order, whatever the timing. The destructor also cancels
//     and awaits: no fetch outlives the query.
//
// Guarantees (§3): a document present and never deleted during the query is returned; no key is
// returned twice. Not thread-safe: one caller at a time.

#include <atomic>
#include <deque>
#include <future>
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
  // The first request per shard; 0 = page_size. A consistent query reads more rows per shard
  // than a plain one (the old shards hold the moving keys' matches, and every shard returns
  // shadow rows), so a larger first page keeps it at one page per shard when a plain query of
  // the same documents needs one (ShardedCollectionOptions::rebalancing_first_page_size).
  size_t first_page_size = 0;
};

class MergeQuery {
 public:
  // `shards` must outlive the query.
  MergeQuery(std::vector<ShardBackend*> shards, MergeQueryOptions options);
  // Cancels the page requests not yet started and waits for the running ones.
  ~MergeQuery();
  MergeQuery(const MergeQuery&) = delete;
  MergeQuery& operator=(const MergeQuery&) = delete;

  // Up to `max` next documents; an empty result means the query is exhausted. After a shard
  // error, every call returns that error.
  [[nodiscard]] StatusOr<std::vector<ShardDocument>> Next(size_t max);
  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] bool failed() const { return !failure_.ok(); }
  // Shards whose next page is requested and not yet taken into the merge (at most one each).
  [[nodiscard]] size_t pages_in_flight() const;

 private:
  struct Stream {
    ShardBackend* shard = nullptr;
    std::deque<ShardDocument> buffer{};
    std::optional<std::string> last_key{};       // of the pages received: the next page's cursor
    bool exhausted = false;                      // the last page received was the shard's last
    std::future<StatusOr<ShardPage>> pending{};  // the next page, requested, not yet received
  };
  // Requests the next page of `s`: on a pool thread when concurrent_, else deferred to Receive.
  void Request(Stream& s);
  // Waits for the page `s` requested and appends it to its buffer.
  [[nodiscard]] Status Receive(Stream& s);
  // Gives every stream that is not exhausted a head: requests all the missing pages, then waits
  // for them in shard order.
  [[nodiscard]] Status FillHeads();
  // Concurrent mode: requests the next page of `s` early when its buffer runs low.
  void Prefetch(Stream& s);
  // Cancels the requests not yet started and waits for the others; their pages are dropped.
  void CancelPending();

  std::vector<Stream> streams_;
  MergeQueryOptions options_;
  bool concurrent_ = false;
  std::atomic<bool> cancelled_{false};  // read by the pool threads before a shard call
  Status failure_;                      // the error that ended the query
  bool done_ = false;
};

}  // namespace shoal::clientside
