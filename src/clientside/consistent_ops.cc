#include "src/clientside/consistent_ops.h"

#include <xxhash.h>

#include <future>
#include <string>

#include "src/clientside/call_pool.h"

namespace shoal::clientside {

namespace {

bool NotFoundCode(const Status& s) { return s.code() == StatusCode::kNotFound; }
bool DuplicateCode(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }

Status Duplicate(std::string_view pk) {
  return AlreadyExistsError(std::string("duplicate ") + std::string(pk));
}
Status Missing(std::string_view pk) {
  return NotFoundError(std::string("not found ") + std::string(pk));
}

// GETSHARD of Algorithm 4: the live copy on `shard`, nullopt when absent or a tombstone is
// reported through `deleted`.
struct ShardLookup {
  std::optional<ShardDocument> live{};
  bool deleted = false;
};

StatusOr<ShardLookup> Lookup(ShardBackend& shard, std::string_view pk) {
  StatusOr<ShardDocument> got = shard.Get(pk);
  if (!got.ok()) {
    if (NotFoundCode(got.status())) return ShardLookup{};
    return got.status();
  }
  if (got->tombstone) return ShardLookup{.live = {}, .deleted = true};
  return ShardLookup{.live = *std::move(got), .deleted = false};
}

// The lookup of a key on its old shard. During `rebalancing` that copy never changes while a
// client operation runs (I1: the rebalancer only copies it away, and removes it in `cleanup`,
// when no client operation runs; I2: clients write only the new shard), so the lookup returns the
// same whenever it is issued. When a shard call is a round trip it is therefore started at once,
// on a pool thread, concurrently with the lookup on the new shard, and the operation pays
// max(new, old) instead of new + old. Local shards look up on demand, in the paper's order.
class OldShardLookup {
 public:
  OldShardLookup(ShardBackend& old_shard, ShardBackend& new_shard, std::string_view pk)
      : shard_(old_shard), pk_(pk) {
    if (old_shard.RemoteCalls() || new_shard.RemoteCalls()) {
      pending_ = CallPool::Shared().Run([this] { return Lookup(shard_, pk_); });
    }
  }
  // The call may still reference this object and the shard: wait for it.
  ~OldShardLookup() {
    if (pending_.valid()) pending_.wait();
  }
  OldShardLookup(const OldShardLookup&) = delete;
  OldShardLookup& operator=(const OldShardLookup&) = delete;

  [[nodiscard]] StatusOr<ShardLookup> Result() {
    return pending_.valid() ? pending_.get() : Lookup(shard_, pk_);
  }

 private:
  ShardBackend& shard_;
  const std::string pk_;
  std::future<StatusOr<ShardLookup>> pending_;
};

}  // namespace

ShardIndex ShardFor(std::string_view primary_key, uint32_t shard_count) {
  const uint64_t h = XXH64(primary_key.data(), primary_key.size(), 0);
  return ShardIndex(static_cast<uint32_t>(h % shard_count));
}

Status NaiveAdd(ShardBackend& shard, const ShardDocument& d) { return shard.Insert(d); }

Status NaiveUpdate(ShardBackend& shard, const ShardDocument& d) { return shard.Update(d); }

Status NaiveDelete(ShardBackend& shard, std::string_view primary_key) {
  return shard.Delete(primary_key);
}

StatusOr<ShardDocument> NaiveGet(ShardBackend& shard, std::string_view primary_key) {
  SHOAL_ASSIGN_OR_RETURN(ShardLookup found, Lookup(shard, primary_key));
  if (!found.live.has_value()) return Missing(primary_key);
  return *std::move(found.live);
}

// Algorithm 1. The linearization point of a DUPLICATE found on the old shard is the read of the
// new shard (the old copy stays until cleanup, I1/I3). The two existence checks may run at once
// (OldShardLookup); the write waits for both.
Status ConsistentAdd(ShardBackend& old_shard, ShardBackend& new_shard, const ShardDocument& d) {
  OldShardLookup old_lookup(old_shard, new_shard, d.primary_key);
  SHOAL_ASSIGN_OR_RETURN(ShardLookup on_new, Lookup(new_shard, d.primary_key));
  if (on_new.live.has_value()) return Duplicate(d.primary_key);
  if (on_new.deleted) {
    // d ∈ S_new as a tombstone: S_new(d_p, tombstone = true) ← d.
    Status r = new_shard.UpdateIf(d, ShardCondition::IsTombstone());
    if (NotFoundCode(r)) return Duplicate(d.primary_key);  // a concurrent add won
    return r;
  }
  SHOAL_ASSIGN_OR_RETURN(ShardLookup on_old, old_lookup.Result());
  if (on_old.live.has_value()) return Duplicate(d.primary_key);
  // S_new ∪_{tombstone} {d}: inserts, or replaces a tombstone, or reports DUPLICATE.
  return new_shard.UpsertIf(d, ShardCondition::IsTombstone());
}

// Algorithm 2.
Status ConsistentUpdate(ShardBackend& old_shard, ShardBackend& new_shard, const ShardDocument& d) {
  SHOAL_ASSIGN_OR_RETURN(ShardLookup on_old, Lookup(old_shard, d.primary_key));
  if (on_old.live.has_value()) {
    Status r = new_shard.UpsertIf(d, ShardCondition::IsLive());
    if (DuplicateCode(r)) return Missing(d.primary_key);  // deleted on the new shard
    return r;
  }
  return new_shard.UpdateIf(d, ShardCondition::IsLive());
}

// Algorithm 3: never removes, marks with a new-version tombstone on the new shard (I2, I4).
Status ConsistentDelete(ShardBackend& old_shard, ShardBackend& new_shard,
                        std::string_view primary_key, MapVersion new_version) {
  const ShardDocument tomb{.primary_key = std::string(primary_key),
                           .body = {},
                           .version = new_version,
                           .tombstone = true};
  SHOAL_ASSIGN_OR_RETURN(ShardLookup on_old, Lookup(old_shard, primary_key));
  if (on_old.live.has_value()) {
    Status r = new_shard.UpsertIf(tomb, ShardCondition::IsLive());
    if (DuplicateCode(r)) return Missing(primary_key);  // already deleted
    return r;
  }
  return new_shard.UpdateIf(tomb, ShardCondition::IsLive());
}

// Algorithm 4 without its third read: new, then old (possibly at once, OldShardLookup). The
// result linearizes at the read of the new shard: the old copy is the same at that instant. The
// paper reads the new shard again when both miss, for a document moved and its old copy removed
// between the two reads; here removals happen only in `cleanup`, when no client operation runs,
// so both missing means no live copy at the first read (I3) and the third read cannot differ.
StatusOr<ShardDocument> ConsistentGet(ShardBackend& old_shard, ShardBackend& new_shard,
                                      std::string_view primary_key) {
  OldShardLookup old_lookup(old_shard, new_shard, primary_key);
  SHOAL_ASSIGN_OR_RETURN(ShardLookup first, Lookup(new_shard, primary_key));
  if (first.deleted) return Missing(primary_key);
  if (first.live.has_value()) return *std::move(first.live);
  SHOAL_ASSIGN_OR_RETURN(ShardLookup second, old_lookup.Result());
  if (second.live.has_value()) return *std::move(second.live);
  return Missing(primary_key);  // absent, or deleted
}

Status MoveDocument(ShardBackend& source, ShardBackend& target, const ShardDocument& d,
                    MapVersion new_version, bool same_shard) {
  ShardDocument moved = d;
  moved.version = new_version;
  if (same_shard) {
    // S_new(d_p)_v ← v_new, only if nobody rewrote it since it was read.
    Status r = source.UpdateIf(moved, ShardCondition::VersionIs(d.version));
    return NotFoundCode(r) ? OkStatus() : r;
  }
  Status r = target.Insert(moved);  // "ignore any conflicts"
  return DuplicateCode(r) ? OkStatus() : r;
}

Status RemoveObsolete(ShardBackend& shard, const ShardDocument& d, MapVersion old_version) {
  const ShardCondition condition =
      d.tombstone ? ShardCondition::IsTombstone() : ShardCondition::VersionIs(old_version);
  Status r = shard.DeleteIf(d.primary_key, condition);
  return NotFoundCode(r) ? OkStatus() : r;
}

}  // namespace shoal::clientside
