#include "src/clientside/merge_query.h"

#include <fmt/format.h>

#include "src/clientside/call_pool.h"

namespace shoal::clientside {

MergeQuery::MergeQuery(std::vector<ShardBackend*> shards, MergeQueryOptions options)
    : options_(std::move(options)) {
  streams_.resize(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    streams_[i].shard = shards[i];
    concurrent_ = concurrent_ || shards[i]->RemoteCalls();
  }
}

MergeQuery::~MergeQuery() { CancelPending(); }

void MergeQuery::Request(Stream& s) {
  ShardQuery q;
  q.filter = options_.filter;
  q.include_tombstones = options_.consistent;
  if (options_.consistent && !options_.filter.empty()) q.or_version = options_.new_version;
  q.has_after_key = s.last_key.has_value();
  if (s.last_key.has_value()) q.after_key = *s.last_key;
  // No cursor yet: the first request (a page received empty is the shard's last).
  q.limit = !s.last_key.has_value() && options_.first_page_size > 0 ? options_.first_page_size
                                                                    : options_.page_size;
  auto fetch = [shard = s.shard, q = std::move(q),
                cancelled = &cancelled_]() -> StatusOr<ShardPage> {
    if (cancelled->load(std::memory_order_acquire)) return CancelledError("query ended");
    return shard->Query(q);
  };
  s.pending = concurrent_ ? CallPool::Shared().Run(std::move(fetch))
                          : std::async(std::launch::deferred, std::move(fetch));
}

Status MergeQuery::Receive(Stream& s) {
  StatusOr<ShardPage> page = s.pending.get();
  if (!page.ok()) return Prefixed(page.status(), fmt::format("query on {}", s.shard->Name()));
  if (page->documents.empty() && !page->done) {
    return InternalError(
        fmt::format("query on {}: an empty page that is not the last", s.shard->Name()));
  }
  s.exhausted = page->done;
  if (!page->documents.empty()) s.last_key = page->documents.back().primary_key;
  for (ShardDocument& d : page->documents) s.buffer.push_back(std::move(d));
  return OkStatus();
}

void MergeQuery::Prefetch(Stream& s) {
  if (concurrent_ && !s.exhausted && !s.pending.valid() &&
      s.buffer.size() <= options_.page_size / 2) {
    Request(s);
  }
}

Status MergeQuery::FillHeads() {
  for (Stream& s : streams_) {
    if (s.buffer.empty() && !s.exhausted && !s.pending.valid()) Request(s);
  }
  for (Stream& s : streams_) {
    if (s.buffer.empty() && s.pending.valid()) SHOAL_RETURN_IF_ERROR(Receive(s));
  }
  for (Stream& s : streams_) Prefetch(s);
  return OkStatus();
}

void MergeQuery::CancelPending() {
  cancelled_.store(true, std::memory_order_release);
  for (Stream& s : streams_) {
    if (!s.pending.valid()) continue;
    s.pending.wait();  // a deferred request runs here and returns at once, cancelled
    s.pending = {};
  }
}

size_t MergeQuery::pages_in_flight() const {
  size_t n = 0;
  for (const Stream& s : streams_) n += s.pending.valid() ? 1 : 0;
  return n;
}

StatusOr<std::vector<ShardDocument>> MergeQuery::Next(size_t max) {
  if (!options_.filter.empty()) SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(options_.filter));
  if (!failure_.ok()) return failure_;
  std::vector<ShardDocument> out;
  while (!done_ && out.size() < max) {
    if (Status filled = FillHeads(); !filled.ok()) {
      failure_ = filled;
      CancelPending();
      return failure_;
    }
    // d ← min over the heads by primary key; then the highest version among that key's copies.
    const ShardDocument* min = nullptr;
    for (const Stream& s : streams_) {
      if (!s.buffer.empty() && (min == nullptr || s.buffer.front().primary_key < min->primary_key))
        min = &s.buffer.front();
    }
    if (min == nullptr) {
      done_ = true;
      break;
    }
    const std::string key = min->primary_key;
    std::optional<ShardDocument> winner;
    for (Stream& s : streams_) {
      if (s.buffer.empty() || s.buffer.front().primary_key != key) continue;
      if (!winner.has_value() || s.buffer.front().version > winner->version ||
          (s.buffer.front().version == winner->version && s.buffer.front().tombstone)) {
        winner = std::move(s.buffer.front());
      }
      s.buffer.pop_front();  // SR_i ← SR_i − {d}
      Prefetch(s);
    }
    // A tombstone, or the shadow row of a newest copy that does not match the filter.
    if (winner->tombstone) continue;
    out.push_back(*std::move(winner));
  }
  return out;
}

}  // namespace shoal::clientside
