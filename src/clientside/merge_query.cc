#include "src/clientside/merge_query.h"

namespace shoal::clientside {

MergeQuery::MergeQuery(std::vector<ShardBackend*> shards, MergeQueryOptions options)
    : options_(std::move(options)) {
  for (ShardBackend* shard : shards) streams_.push_back(Stream{.shard = shard});
}

MergeQuery::~MergeQuery() = default;

Status MergeQuery::Fill(Stream& s) {
  if (!s.buffer.empty() || s.exhausted) return OkStatus();
  ShardQuery q;
  q.filter = options_.filter;
  q.include_tombstones = options_.consistent;
  if (options_.consistent && !options_.filter.empty()) q.or_version = options_.new_version;
  q.has_after_key = s.last_key.has_value();
  if (s.last_key.has_value()) q.after_key = *s.last_key;
  q.limit = options_.page_size;
  SHOAL_ASSIGN_OR_RETURN(ShardPage page, s.shard->Query(q));
  s.exhausted = page.done;
  if (!page.documents.empty()) s.last_key = page.documents.back().primary_key;
  for (ShardDocument& d : page.documents) s.buffer.push_back(std::move(d));
  return OkStatus();
}

StatusOr<std::vector<ShardDocument>> MergeQuery::Next(size_t max) {
  if (!options_.filter.empty()) SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(options_.filter));
  std::vector<ShardDocument> out;
  while (!done_ && out.size() < max) {
    for (Stream& s : streams_) SHOAL_RETURN_IF_ERROR(Fill(s));
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
    }
    // A tombstone, or the shadow row of a newest copy that does not match the filter.
    if (winner->tombstone) continue;
    out.push_back(*std::move(winner));
  }
  return out;
}

}  // namespace shoal::clientside
