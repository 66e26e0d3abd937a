#include "src/clientside/sharded_collection.h"

#include <fmt/format.h>

#include <random>

#include "src/clientside/consistent_ops.h"

namespace shoal::clientside {

// --- QueryCursor --------------------------------------------------------------------------

QueryCursor::~QueryCursor() {
  query_.reset();  // waits for its page reads: none may run once the rebalancer stops waiting
  Deregister();
}

void QueryCursor::Deregister() {
  if (key_.empty()) return;
  Status ignored = store_->Delete(key_, metadata::kAnyVersion);  // gone with the session anyway
  (void)ignored;
  key_.clear();
}

StatusOr<std::vector<ShardDocument>> QueryCursor::Next(size_t max) {
  StatusOr<std::vector<ShardDocument>> docs = query_->Next(max);
  // A failed query has awaited its page reads and never reads again.
  if (query_->failed() || (query_->done() && docs.ok() && docs->size() < max)) Deregister();
  return docs;
}

// --- ShardedCollection ----------------------------------------------------------------------

ShardedCollection::ShardedCollection(ShardedCollectionOptions options)
    : options_(std::move(options)), keys_(options_.collection) {}

ShardedCollection::~ShardedCollection() {
  Status ignored = Close();
  (void)ignored;
}

StatusOr<std::unique_ptr<ShardedCollection>> ShardedCollection::Open(
    ShardedCollectionOptions options) {
  if (options.metadata == nullptr || options.catalog == nullptr) {
    return InvalidArgumentError("a sharded collection needs a metadata store and a catalog");
  }
  std::unique_ptr<ShardedCollection> c(new ShardedCollection(std::move(options)));
  SHOAL_RETURN_IF_ERROR(c->Start());
  return c;
}

Status ShardedCollection::Start() {
  metadata::MetadataStore& store = *options_.metadata;
  SHOAL_ASSIGN_OR_RETURN(session_, store.OpenSession(options_.session_ttl));
  client_name_ = options_.client_name;
  if (client_name_.empty()) {
    client_name_ = fmt::format("c{}-{:08x}", session_.value(), std::random_device{}());
  }
  // Register first, then read the state (see the class comment).
  SHOAL_RETURN_IF_ERROR(
      store.PutEphemeral(session_, keys_.member(client_name_), "", metadata::kMustNotExist)
          .status());
  SHOAL_ASSIGN_OR_RETURN(VersionedState current, ReadShardingState(store, keys_));
  {
    std::lock_guard lock(mu_);
    state_ = current.state;
  }
  watch_ = store.Watch(keys_.root(), [this](const metadata::WatchEvent&) {
    std::lock_guard lock(mu_);
    dirty_ = true;
    cv_.notify_all();
  });
  control_ = std::thread([this] { ControlLoop(); });
  return OkStatus();
}

Status ShardedCollection::Close() {
  if (closed_) return OkStatus();
  closed_ = true;
  {
    std::unique_lock lock(mu_);
    closing_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return in_flight_ == 0; });
  }
  if (control_.joinable()) control_.join();
  metadata::MetadataStore& store = *options_.metadata;
  store.Unwatch(watch_);
  Status closed = store.CloseSession(session_);
  if (closed.code() == StatusCode::kNotFound) closed = OkStatus();
  // Leaving may complete a barrier the others are waiting in.
  StatusOr<bool> ignored = TryCompleteBarrier(store, keys_);
  (void)ignored;
  return closed;
}

void ShardedCollection::ControlLoop() {
  const auto tick = std::max(options_.session_ttl / 4, std::chrono::milliseconds(1));
  std::unique_lock lock(mu_);
  while (!closing_) {
    cv_.wait_for(lock, tick, [&] { return dirty_ || closing_; });
    if (closing_) break;
    dirty_ = false;
    lock.unlock();
    Status alive = options_.metadata->KeepAlive(session_);
    Status refreshed = alive.ok() ? Refresh() : alive;
    lock.lock();
    if (alive.code() == StatusCode::kNotFound) {
      lost_ = true;  // other clients no longer wait for us: stop serving
      cv_.notify_all();
    }
    if (!refreshed.ok()) dirty_ = true;  // retry at the next tick
  }
}

Status ShardedCollection::Refresh() {
  metadata::MetadataStore& store = *options_.metadata;
  SHOAL_ASSIGN_OR_RETURN(VersionedState current, ReadShardingState(store, keys_));
  ShardingState barrier;
  {
    std::unique_lock lock(mu_);
    if (current.state != state_) {
      state_ = current.state;
      joined_ = false;
      cv_.notify_all();  // releases queued requests if the new state admits them
    }
    if (!IsBarrier(state_.state)) return OkStatus();
    barrier = state_;
    if (!joined_) {
      // Drain: operations admitted under the previous state finish first (§4).
      cv_.wait(lock, [&] { return in_flight_ == 0 || closing_; });
      if (closing_) return CancelledError("closing");
    }
  }
  const std::string join_key = keys_.barrier(barrier) + client_name_;
  SHOAL_RETURN_IF_ERROR(store.PutEphemeral(session_, join_key, "", metadata::kAnyVersion).status());
  if (!last_join_key_.empty() && last_join_key_ != join_key) {
    // The previous barrier is over (this one could not start before it completed).
    Status ignored = store.Delete(last_join_key_, metadata::kAnyVersion);
    (void)ignored;
  }
  last_join_key_ = join_key;
  {
    std::lock_guard lock(mu_);
    if (state_ == barrier) joined_ = true;
  }
  return TryCompleteBarrier(store, keys_).status();
}

StatusOr<ShardingState> ShardedCollection::Admit() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] {
    return closing_ || lost_ || AlgorithmFor(state_.state) != ClientAlgorithm::kNone;
  });
  if (closing_) return CancelledError("the sharded collection is closing");
  if (lost_) return UnavailableError("the metadata session expired");
  ++in_flight_;
  return state_;
}

void ShardedCollection::Release() {
  std::lock_guard lock(mu_);
  if (--in_flight_ == 0) cv_.notify_all();
}

ShardingState ShardedCollection::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

Status ShardedCollection::CheckInvariants() const {
  std::lock_guard lock(mu_);
  SHOAL_RETURN_IF_ERROR(state_.CheckInvariants());
  if (joined_ && !IsBarrier(state_.state)) return InternalError("joined outside a barrier");
  if (joined_ && in_flight_ != 0) return InternalError("operations in flight after joining");
  return OkStatus();
}

StatusOr<ShardedCollection::Targets> ShardedCollection::Resolve(
    const ShardingState& state, std::string_view primary_key) const {
  Targets t;
  const ShardIndex to = ShardFor(primary_key, state.shards);
  SHOAL_ASSIGN_OR_RETURN(t.new_shard, options_.catalog->Get(to));
  if (state.state == ClientState::kNormal) {
    t.old_shard = t.new_shard;
    return t;
  }
  const ShardIndex from = ShardFor(primary_key, state.old_shards);
  SHOAL_ASSIGN_OR_RETURN(t.old_shard, options_.catalog->Get(from));
  t.consistent = from != to;  // §6: the naïve algorithm when the shards coincide
  return t;
}

namespace {

// Counts one admitted operation for its whole duration.
class AdmitGuard {
 public:
  explicit AdmitGuard(std::function<void()> release) : release_(std::move(release)) {}
  ~AdmitGuard() { release_(); }
  AdmitGuard(const AdmitGuard&) = delete;
  AdmitGuard& operator=(const AdmitGuard&) = delete;

 private:
  std::function<void()> release_;
};

}  // namespace

Status ShardedCollection::Add(std::string_view primary_key, std::string_view body) {
  SHOAL_ASSIGN_OR_RETURN(ShardingState s, Admit());
  AdmitGuard guard([this] { Release(); });
  SHOAL_ASSIGN_OR_RETURN(Targets t, Resolve(s, primary_key));
  const ShardDocument d{.primary_key = std::string(primary_key),
                        .body = std::string(body),
                        .version = s.version,
                        .tombstone = false};
  return t.consistent ? ConsistentAdd(*t.old_shard, *t.new_shard, d) : NaiveAdd(*t.new_shard, d);
}

Status ShardedCollection::Update(std::string_view primary_key, std::string_view body) {
  SHOAL_ASSIGN_OR_RETURN(ShardingState s, Admit());
  AdmitGuard guard([this] { Release(); });
  SHOAL_ASSIGN_OR_RETURN(Targets t, Resolve(s, primary_key));
  const ShardDocument d{.primary_key = std::string(primary_key),
                        .body = std::string(body),
                        .version = s.version,
                        .tombstone = false};
  return t.consistent ? ConsistentUpdate(*t.old_shard, *t.new_shard, d)
                      : NaiveUpdate(*t.new_shard, d);
}

Status ShardedCollection::Delete(std::string_view primary_key) {
  SHOAL_ASSIGN_OR_RETURN(ShardingState s, Admit());
  AdmitGuard guard([this] { Release(); });
  SHOAL_ASSIGN_OR_RETURN(Targets t, Resolve(s, primary_key));
  return t.consistent ? ConsistentDelete(*t.old_shard, *t.new_shard, primary_key, s.version)
                      : NaiveDelete(*t.new_shard, primary_key);
}

StatusOr<ShardDocument> ShardedCollection::Get(std::string_view primary_key) {
  SHOAL_ASSIGN_OR_RETURN(ShardingState s, Admit());
  AdmitGuard guard([this] { Release(); });
  SHOAL_ASSIGN_OR_RETURN(Targets t, Resolve(s, primary_key));
  return t.consistent ? ConsistentGet(*t.old_shard, *t.new_shard, primary_key)
                      : NaiveGet(*t.new_shard, primary_key);
}

StatusOr<std::unique_ptr<QueryCursor>> ShardedCollection::Query(storage::DocumentFilter filter) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(filter));
  SHOAL_ASSIGN_OR_RETURN(ShardingState s, Admit());
  AdmitGuard guard([this] { Release(); });
  const bool consistent = s.state == ClientState::kRebalancing;
  const uint32_t count = consistent ? s.span() : s.shards;
  std::vector<ShardBackend*> shards;
  for (uint32_t i = 0; i < count; ++i) {
    SHOAL_ASSIGN_OR_RETURN(ShardBackend * shard, options_.catalog->Get(ShardIndex(i)));
    shards.push_back(shard);
  }
  uint64_t n = 0;
  {
    std::lock_guard lock(mu_);
    n = next_query_++;
  }
  // Registered while admitted, so no cleanup can start before the rebalancer sees it (§6.5).
  std::string key = fmt::format("{}{}/{}", keys_.queries(), client_name_, n);
  SHOAL_RETURN_IF_ERROR(
      options_.metadata->PutEphemeral(session_, key, s.Encode(), metadata::kMustNotExist).status());
  auto query = std::make_unique<MergeQuery>(
      std::move(shards),
      MergeQueryOptions{.filter = std::move(filter),
                        .consistent = consistent,
                        .new_version = s.version,
                        .page_size = options_.query_page_size,
                        .first_page_size = consistent ? options_.rebalancing_first_page_size : 0});
  return std::unique_ptr<QueryCursor>(
      new QueryCursor(options_.metadata, std::move(key), std::move(query)));
}

}  // namespace shoal::clientside
